// svc console: GraphiQL (vendored, see VERSIONS) on this server's /v1/graphql.
// Queries and mutations go over HTTP, subscriptions over a graphql-transport-ws websocket
// on the same path (ws:// or wss:// as the page's scheme), whose connection_init carries
// the admin secret and the headers editor's headers under `payload.headers`. When the
// server has an admin secret, it is asked for first, checked with one `{ __typename }`
// request and kept in sessionStorage for this tab; `?logout` forgets it.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("svc-console-config").textContent);
  var KEY = "svc-console:admin-secret";
  var HEADER = config.adminSecretHeader; // the server's (x-hasura-admin-secret: --hasura-compat)
  if (new URLSearchParams(location.search).has("logout")) {
    sessionStorage.removeItem(KEY);
  }

  function socketUrl(path) {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  }

  // Whether `document` has a subscription named `operationName` (or an anonymous one when
  // no name is given): GraphiQL's own test for choosing the websocket.
  function isSubscription(document, operationName) {
    return !!document && document.definitions.some(function (definition) {
      var name = definition.name ? definition.name.value : undefined;
      return (
        definition.kind === "OperationDefinition" &&
        definition.operation === "subscription" &&
        name === (operationName || undefined)
      );
    });
  }

  function start(secret) {
    var headers = {};
    if (secret) {
      headers[HEADER] = secret;
    }
    var graphiqlFetcher = GraphiQL.createFetcher({
      url: location.origin + config.graphqlPath,
      subscriptionUrl: socketUrl(config.graphqlPath),
      headers: headers,
      wsConnectionParams: { headers: headers },
    });
    // GraphiQL's fetcher puts the headers editor's headers at the top level of the
    // websocket's connection_init payload, where the server does not look: it reads
    // `payload.headers` only (as the reference does). So for a subscription they go under
    // `headers`, merged over the admin secret, and reach the server as they do over HTTP.
    var fetcher = function (params, options) {
      if (options && isSubscription(options.documentAST, params.operationName)) {
        var merged = Object.assign({}, headers, options.headers);
        options = Object.assign({}, options, { headers: { headers: merged } });
      }
      return graphiqlFetcher(params, options);
    };
    document.getElementById("svc-login").hidden = true;
    var root = ReactDOM.createRoot(document.getElementById("graphiql"));
    root.render(
      React.createElement(GraphiQL, {
        fetcher: fetcher,
        plugins: [GraphiQLPluginExplorer.explorerPlugin()],
        isHeadersEditorEnabled: true,
        shouldPersistHeaders: true,
        defaultQuery: config.defaultQuery,
      })
    );
  }

  function check(secret) {
    var headers = { "content-type": "application/json" };
    headers[HEADER] = secret;
    return fetch(config.graphqlPath, {
      method: "POST",
      headers: headers,
      body: JSON.stringify({ query: "{ __typename }" }),
    }).then(function (response) {
      return response.json().then(function (body) {
        return response.ok && !body.errors;
      });
    });
  }

  function login() {
    var form = document.getElementById("svc-login");
    var input = document.getElementById("svc-secret");
    var message = document.getElementById("svc-login-message");
    form.hidden = false;
    input.focus();
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var secret = input.value;
      check(secret).then(function (ok) {
        if (ok) {
          sessionStorage.setItem(KEY, secret);
          start(secret);
        } else {
          message.textContent = "That admin secret was refused.";
        }
      }, function () {
        message.textContent = "The server did not answer.";
      });
    });
  }

  var stored = sessionStorage.getItem(KEY);
  if (!config.adminSecretSet) {
    start(null);
  } else if (stored) {
    start(stored);
  } else {
    login();
  }
})();
