"""``symfonic new NAME``: a project of your own, from which every other command works.

It writes a directory with a package (an agent on a real model, a refund tool under approval, and
the ``app`` factory the command line finds through ``[tool.symfonic] app``), a test that runs the
agent through a pause and a resume on a stand-in model, a pyproject with the extras the model's
provider needs, and a README with the commands. The files are the templates beside this module
(``template/``, ``{{placeholders}}`` filled in): data rather than code, so they read as the files
they become.

An existing directory that is not empty is refused: ``new`` never overwrites anything.

The project depends on the distribution ``symfonic-runtime`` (the import name stays ``symfonic``:
the name ``symfonic`` on the package index is someone else's). Until a release is published, or to
build on a checkout, ``--symfonic-path`` points that dependency at a source tree, so the project's
own ``pip install`` takes symfonic from there rather than from the index.
"""

from __future__ import annotations

import keyword
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

from symfonic.cli.common import app, console
from symfonic.cli.exits import EPILOG, Exit, fail

DISTRIBUTION = "symfonic-runtime"
"""symfonic's name on the package index, which projects depend on."""
DEFAULT_MODEL = "openai:gpt-5.1"
PROVIDERS = {
    "openai": ("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "openai-chat": ("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    "anthropic": ("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
}
"""Model prefix -> (the extra it needs, its API key variable, its base URL variable)."""
FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "gitignore.tmpl": ".gitignore",
    "package/__init__.py.tmpl": "{{package}}/__init__.py",
    "package/agent.py.tmpl": "{{package}}/agent.py",
    "package/app.py.tmpl": "{{package}}/app.py",
    "tests/test_agent.py.tmpl": "tests/test_agent.py",
}
"""Template -> where it goes in the project."""
RESERVED = {"symfonic", "tests", "test"}
"""Package names that would shadow what the project imports."""


@app.command(epilog=EPILOG)
def new(name: Annotated[str, typer.Argument(help="The project's directory (its last part names "
                                                 "the package).")],
        model: Annotated[str, typer.Option(help="The agent's model, provider:model (openai:..., "
                                                "openai-chat:..., anthropic:...).")] = DEFAULT_MODEL,
        symfonic_path: Annotated[Path | None, typer.Option(
            help=f"A symfonic source tree (a checkout) the project depends on instead of "
                 f"{DISTRIBUTION} from the package index.")] = None,
        ) -> None:
    """Write a new project NAME: an agent on a real model with a refund under approval, its app,
    a test, a pyproject and a README. Refuses a directory that exists and is not empty."""
    target = Path(name)
    package = package_name(target.name)
    provider, _, model_name = model.partition(":")
    if provider not in PROVIDERS or not model_name:
        fail(Exit.USAGE, f"--model {model!r} is not provider:model with a provider among "
             f"{', '.join(PROVIDERS)} (e.g. {DEFAULT_MODEL})")
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        fail(Exit.USAGE, f"{target} already exists and is not an empty directory: choose another "
             "name, or remove it first")
    extra, key_variable, base_url_variable = PROVIDERS[provider]
    dependency = f"{DISTRIBUTION}[http,{extra}]"
    if symfonic_path is not None:
        dependency += f" @ {checkout(symfonic_path).as_uri()}"
    values = {"name": target.name, "package": package, "model": model, "dependency": dependency,
              "distribution": DISTRIBUTION, "key_variable": key_variable,
              "base_url_variable": base_url_variable}
    templates = resources.files("symfonic.cli") / "template"
    for source, destination in FILES.items():
        path = target / fill(destination, values)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fill(templates.joinpath(source).read_text(encoding="utf-8"), values),
                        encoding="utf-8")
    console.print(f"created {target} (package {package}, model {model})", highlight=False,
                  markup=False)
    console.print(f"  cd {target} && pip install -e '.[dev]' && pytest && symfonic serve",
                  highlight=False, markup=False)


def package_name(directory: str) -> str:
    """The Python package for a project directory: lower case, ``-`` and ``.`` as ``_``."""
    package = re.sub(r"[-.\s]+", "_", directory.strip()).lower()
    if not package.isidentifier() or keyword.iskeyword(package) or package in RESERVED:
        fail(Exit.USAGE, f"{directory!r} does not make a Python package name: use letters, digits "
             "and - or _, starting with a letter (and not symfonic or tests)")
    return package


def checkout(path: Path) -> Path:
    """``path`` made absolute, refused unless it holds symfonic's own ``pyproject.toml``: a path
    dependency on anything else would only fail later, inside ``pip install``."""
    root = path.expanduser().resolve()
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    except (OSError, tomllib.TOMLDecodeError, KeyError, TypeError):
        project = {}
    if not isinstance(project, dict) or project.get("name") != DISTRIBUTION:
        fail(Exit.USAGE, f"--symfonic-path {str(path)!r} is not a symfonic checkout (no "
             f"pyproject.toml naming {DISTRIBUTION} there)")
    return root


def fill(template: str, values: dict[str, str]) -> str:
    """``template`` with every ``{{key}}`` replaced by ``values[key]``."""
    for key, value in values.items():
        template = template.replace("{{" + key + "}}", value)
    return template
