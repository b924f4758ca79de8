// The four Node GraphQL clients tests/node/client.mjs drives, each (a factory, possibly
// async: Apollo Client and urql are imported only when used) behind one shape:
//   subscribe(query, next, fail) -> stop()   next gets {data, errors?} per result
//   mutate(query) -> Promise<{data, errors?}>
//   close() -> Promise<{code?}>             resolves once the socket is closed
// `url` is the websocket URL (ws://host:port/v1/graphql); Apollo Client and urql send
// their mutation over HTTP to the same path (http://...), the way their docs set up a
// split between queries/mutations and subscriptions.
import { createClient } from "graphql-ws";
import stwsPkg from "subscriptions-transport-ws";
import WebSocket from "ws";

const { SubscriptionClient } = stwsPkg;

// A graphql-ws client; `on.error` reports the socket's error (e.g. Node ws's
// "Unexpected server response: 501") before the sink sees the close.
function graphqlWsClient(url, onSocketError, options = {}) {
  let closed;
  const whenClosed = new Promise((resolve) => (closed = resolve));
  const client = createClient({
    url,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    on: {
      error: (e) => onSocketError(e),
      closed: (event) => closed({ code: event && event.code }),
    },
    ...options,
  });
  return { client, whenClosed };
}

// Operation results into one promise (graphql-ws/subscriptions-transport-ws: a mutation
// is an operation whose one result is followed by `complete`).
function once(start) {
  return new Promise((resolve, reject) => {
    let result;
    start({
      next: (r) => (result = r),
      error: reject,
      complete: () => resolve(result),
    });
  });
}

function graphqlWs(url, onSocketError) {
  const { client, whenClosed } = graphqlWsClient(url, onSocketError, { lazy: false });
  return {
    subscribe: (query, next, fail) => client.subscribe({ query }, { next, error: fail, complete: () => {} }),
    mutate: (query) => once((sink) => client.subscribe({ query }, sink)),
    close: () => {
      client.dispose();
      return whenClosed;
    },
  };
}

function subscriptionsTransportWs(url, onSocketError) {
  const client = new SubscriptionClient(url, { reconnect: false }, WebSocket);
  client.onError((e) => onSocketError(e));
  const whenClosed = new Promise((resolve) => client.onDisconnected(() => resolve({})));
  return {
    subscribe: (query, next, fail) => {
      const sub = client.request({ query }).subscribe({ next, error: fail });
      return () => sub.unsubscribe();
    },
    mutate: (query) => once((sink) => client.request({ query }).subscribe(sink)),
    close: () => {
      client.close();
      return whenClosed;
    },
  };
}

// Apollo Client 3: subscriptions over GraphQLWsLink (a graphql-ws client), everything
// else over HttpLink, an InMemoryCache.
async function apollo(url, onSocketError) {
  // Apollo Client 3 has no package "exports": Node's ESM loader needs the files' paths.
  const { ApolloClient, HttpLink, InMemoryCache, gql, split } = await import(
    "@apollo/client/core/index.js"
  );
  const { GraphQLWsLink } = await import("@apollo/client/link/subscriptions/index.js");
  const { getMainDefinition } = await import("@apollo/client/utilities/index.js");
  const { client: ws, whenClosed } = graphqlWsClient(url, onSocketError);
  const link = split(
    ({ query }) => {
      const def = getMainDefinition(query);
      return def.kind === "OperationDefinition" && def.operation === "subscription";
    },
    new GraphQLWsLink(ws),
    new HttpLink({ uri: url.replace(/^ws/, "http") }),
  );
  const client = new ApolloClient({ link, cache: new InMemoryCache() });
  return {
    subscribe: (query, next, fail) => {
      const sub = client
        .subscribe({ query: gql(query) })
        .subscribe({ next, error: fail });
      return () => sub.unsubscribe();
    },
    mutate: (query) => client.mutate({ mutation: gql(query) }),
    close: () => {
      client.stop();
      ws.dispose();
      return whenClosed;
    },
  };
}

// urql: @urql/core's Client, mutations over fetchExchange, subscriptions over
// subscriptionExchange forwarding to a graphql-ws client (as urql's docs show).
async function urql(url, onSocketError) {
  const { Client, cacheExchange, fetchExchange, subscriptionExchange } = await import("@urql/core");
  const { client: ws, whenClosed } = graphqlWsClient(url, onSocketError);
  const client = new Client({
    url: url.replace(/^ws/, "http"),
    exchanges: [
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(request) {
          const input = { ...request, query: request.query || "" };
          return {
            subscribe(sink) {
              const unsubscribe = ws.subscribe(input, sink);
              return { unsubscribe };
            },
          };
        },
      }),
    ],
  });
  // urql reports errors as `result.error` (a CombinedError): into `errors`.
  const plain = (r) => (r.error ? { data: r.data, errors: [r.error.message] } : { data: r.data });
  return {
    subscribe: (query, next) => {
      const sub = client.subscription(query, {}).subscribe((r) => next(plain(r)));
      return () => sub.unsubscribe();
    },
    mutate: async (query) => plain(await client.mutation(query, {}).toPromise()),
    close: () => {
      ws.dispose();
      return whenClosed;
    },
  };
}

export const TRANSPORTS = {
  "graphql-ws": graphqlWs,
  "subscriptions-transport-ws": subscriptionsTransportWs,
  apollo,
  urql,
};
