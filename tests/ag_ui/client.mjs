// One AG-UI run with the official client (@ag-ui/client's HttpAgent), as a web page makes it.
// The test gives a JSON command as the first argument and reads one JSON line back:
//   {url, key, threadId, messages?, say?, resume?}
// - messages: the client's copy of the thread (a page that kept it); none after a reload;
// - say: a user message to add before the run;
// - resume: the entries to answer interrupts with.
import { HttpAgent } from "@ag-ui/client";

const command = JSON.parse(process.argv[2]);
const agent = new HttpAgent({
  url: command.url,
  headers: { Authorization: `Bearer ${command.key}` },
  threadId: command.threadId,
  initialMessages: command.messages ?? [],
});
const events = [];
let runError = null;
const subscriber = {
  onEvent: ({ event }) => { events.push(event.type); },
  onRunErrorEvent: ({ event }) => { runError = { code: event.code ?? null, message: event.message }; },
};

async function run(parameters) {
  try {
    await agent.runAgent(parameters, subscriber);
    return null;
  } catch (error) {
    return String(error?.message ?? error);
  }
}

if (command.say) {
  agent.addMessage({ id: crypto.randomUUID(), role: "user", content: command.say });
}
const thrown = await run(command.resume ? { resume: command.resume } : {});
process.stdout.write(JSON.stringify({
  events, runError, thrown, messages: agent.messages, pendingInterrupts: agent.pendingInterrupts,
}) + "\n");
