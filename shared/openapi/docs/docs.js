// Starts Scalar's API reference on the API's own document. No inline
// script (the page's Content-Security-Policy runs only this server's
// scripts), nothing fetched from elsewhere: no web fonts, no request proxy
// (the console's requests go from the browser to this server), no
// telemetry, no AI agent, no button to Scalar's hosted client. Code
// samples: curl, Go, Python and Node.
(function () {
  var root = document.getElementById("app");
  Scalar.createApiReference(root, {
    url: root.dataset.openapi,
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    showDeveloperTools: "never",
    persistAuth: false,
    documentDownloadType: "json",
    showOperationId: true,
    defaultOpenAllTags: true,
    hideClientButton: true,
    defaultHttpClient: { targetKey: "shell", clientKey: "curl" },
    hiddenClients: {
      c: true, clojure: true, csharp: true, dart: true, fsharp: true, http: true, java: true, js: true,
      julia: true, kotlin: true, objc: true, ocaml: true, php: true, powershell: true, r: true,
      ruby: true, rust: true, swift: true,
      shell: ["httpie", "wget"],
      python: ["aiohttp", "httpx_sync", "httpx_async"],
      node: ["axios", "ofetch", "undici"]
    },
    authentication: { preferredSecurityScheme: "bearerAuth" }
  });
})();
