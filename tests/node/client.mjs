// One Node websocket client against a running svc (tests/test_ws_node.py):
//   node client.mjs <graphql-ws | subscriptions-transport-ws> <ws url>
// Connects, subscribes to `item`, waits for the first result, inserts a row with a
// mutation over the same client, waits for the changed result, stops the subscription
// and closes. Prints one JSON line per step ({"step": ..., ...}); exits 1 on any error
// or after 20 s.
import { createClient } from "graphql-ws";
import pkg from "subscriptions-transport-ws";
import WebSocket from "ws";

const { SubscriptionClient } = pkg;
const [kind, url] = process.argv.slice(2);
const SUBSCRIPTION = "subscription { item(order_by: {id: asc}) { name } }";
const MUTATION = 'mutation { insert_item_one(object: {owner: "n", name: "node"}) { id } }';

const say = (step, extra = {}) => console.log(JSON.stringify({ step, ...extra }));
const fail = (why) => {
  say("error", { error: String(why && why.message ? why.message : JSON.stringify(why)) });
  process.exit(1);
};
setTimeout(() => fail("timeout"), 20000);

// The client's operations behind one shape: subscribe(query, next) -> stop().
function transport() {
  if (kind === "graphql-ws") {
    const client = createClient({ url, webSocketImpl: WebSocket, lazy: false, retryAttempts: 0 });
    return {
      subscribe: (query, next) => client.subscribe({ query }, { next, error: fail, complete: () => {} }),
      close: () => client.dispose(),
    };
  }
  const client = new SubscriptionClient(url, { reconnect: false }, WebSocket);
  client.onError((e) => fail(e));
  return {
    subscribe: (query, next) => {
      const sub = client.request({ query }).subscribe({ next, error: fail });
      return () => sub.unsubscribe();
    },
    close: () => client.close(),
  };
}

const t = transport();
let results = 0;
const stop = t.subscribe(SUBSCRIPTION, (result) => {
  if (result.errors) fail(result.errors);
  results += 1;
  const names = result.data.item.map((row) => row.name);
  if (results === 1) {
    say("first", { names });
    t.subscribe(MUTATION, (answer) => {
      if (answer.errors) fail(answer.errors);
      say("mutation", { data: answer.data });
    });
  } else if (names.includes("node")) {
    say("change", { names });
    stop();
    say("stopped");
    setTimeout(() => {
      t.close();
      say("closed");
      process.exit(0);
    }, 300);
  }
});
