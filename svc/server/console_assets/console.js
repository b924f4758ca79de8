// svc console: GraphiQL (vendored, see VERSIONS) on this server's /v1/graphql.
// Queries and mutations go over HTTP, subscriptions over a graphql-transport-ws websocket
// on the same path. When the server has an admin secret, it is asked for first, checked
// with one `{ __typename }` request and kept in sessionStorage for this tab; `?logout`
// forgets it.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("svc-console-config").textContent);
  var KEY = "svc-console:admin-secret";
  var HEADER = "x-svc-admin-secret";
  if (new URLSearchParams(location.search).has("logout")) {
    sessionStorage.removeItem(KEY);
  }

  function socketUrl(path) {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  }

  function start(secret) {
    var headers = {};
    if (secret) {
      headers[HEADER] = secret;
    }
    var fetcher = GraphiQL.createFetcher({
      url: location.origin + config.graphqlPath,
      subscriptionUrl: socketUrl(config.graphqlPath),
      headers: headers,
      wsConnectionParams: secret ? { headers: headers } : undefined,
    });
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
