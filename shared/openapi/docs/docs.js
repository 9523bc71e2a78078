// Starts Swagger UI on the API's own OpenAPI document (no inline script:
// the page's Content-Security-Policy allows only scripts from this server).
window.addEventListener("load", function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.dataset.openapi,
    domNode: root,
    deepLinking: true,
    displayOperationId: true,
    displayRequestDuration: true,
    showExtensions: true,
    defaultModelsExpandDepth: 1,
    docExpansion: "list",
    tryItOutEnabled: false,
    persistAuthorization: false,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
});
