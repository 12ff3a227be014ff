"""AG-UI for web front ends: every agent at ``/ag-ui/{agent}``, its pauses as interrupts.

Needs the ``ag-ui`` extra (``pip install 'symfonic-runtime[ag-ui]'``); ``create_app`` mounts it
when the extra is installed or when ``mounts`` (``symfonic serve --mount ag-ui``) asks for it.
See ``docs/ag-ui.md``.
"""

from symfonic.transports.ag_ui.mount import mount_ag_ui

__all__ = ["mount_ag_ui"]
