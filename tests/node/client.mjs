// One Node GraphQL client against a running svc (tests/test_ws_node.py):
//   node client.mjs <graphql-ws | subscriptions-transport-ws | apollo | urql> <ws url>
// Connects, subscribes to `item`, waits for the first result, inserts a row with a
// mutation through the same client (graphql-ws, subscriptions-transport-ws: over the
// socket; Apollo Client, urql: over HTTP, transports.mjs), waits for the changed result,
// stops the subscription and closes. Prints one JSON line per step, in this order:
//   {"step": "first", "names": [...]}      the subscription's first result
//   {"step": "mutation", "data": {...}}    the mutation's answer
//   {"step": "change", "names": [...]}     the first result holding the new row
//   {"step": "stopped"}                    the subscription stopped
//   {"step": "closed", "code": ...}        the socket closed (code: graphql-ws clients)
// A change pushed before the mutation's answer arrives (a different channel for Apollo
// and urql) is printed after it. On any error, {"step": "error", "error": "..."} and
// exit 1 (also after 20 s).
import { TRANSPORTS } from "./transports.mjs";

const [kind, url] = process.argv.slice(2);
const SUBSCRIPTION = "subscription { item(order_by: {id: asc}) { name } }";
const MUTATION = 'mutation { insert_item_one(object: {owner: "n", name: "node"}) { id } }';

const say = (step, extra = {}) => console.log(JSON.stringify({ step, ...extra }));
const fail = (why) => {
  say("error", { error: String(why && why.message ? why.message : JSON.stringify(why)) });
  process.exit(1);
};
setTimeout(() => fail("timeout"), 20000);

if (!(kind in TRANSPORTS)) fail(`unknown client ${kind}`);
const t = await TRANSPORTS[kind](url, fail);
let mutated = null;
let changed = false;
const stop = t.subscribe(
  SUBSCRIPTION,
  async (result) => {
    if (result.errors) fail(result.errors);
    const names = result.data.item.map((row) => row.name);
    if (mutated === null) {
      say("first", { names });
      mutated = t.mutate(MUTATION).then((answer) => {
        if (answer.errors) fail(answer.errors);
        say("mutation", { data: answer.data });
      }, fail);
    } else if (names.includes("node") && !changed) {
      changed = true;
      await mutated;
      say("change", { names });
      stop();
      say("stopped");
      await new Promise((resolve) => setTimeout(resolve, 300));
      const { code } = await t.close();
      say("closed", code === undefined ? {} : { code });
      process.exit(0);
    }
  },
  fail,
);
