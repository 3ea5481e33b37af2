// Starts Swagger UI on /api/v1/docs (a file, not inline: the Content-Security-Policy allows
// scripts from this origin only). A signed-in browser's requests carry its session cookie;
// those that change state also need the sign-in's CSRF token, fetched here once.
"use strict";

(function () {
  const root = document.getElementById("swagger-ui");
  const unsafe = new Set(["POST", "PUT", "PATCH", "DELETE"]);
  let csrfToken = null;

  fetch(root.dataset.sessionUrl, { credentials: "same-origin" })
    .then((response) => (response.ok ? response.json() : null))
    .then((session) => {
      csrfToken = session ? session.csrf_token : null;
    })
    .catch(() => {});

  window.ui = SwaggerUIBundle({
    url: root.dataset.specUrl,
    domNode: root,
    deepLinking: true,
    layout: "BaseLayout",
    validatorUrl: null, // the default would load a badge from a public validator
    requestInterceptor: (request) => {
      const method = (request.method || "GET").toUpperCase();
      const bearer = request.headers && request.headers.Authorization;
      if (csrfToken && unsafe.has(method) && !bearer) {
        request.headers["X-CSRF-Token"] = csrfToken;
      }
      return request;
    },
  });
})();
