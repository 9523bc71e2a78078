// A TypeScript client of the Practice API (/api/v1): the request and
// answer types are generated from the OpenAPI document
// (shared/openapi/openapi.json, `npm run generate`, openapi-typescript),
// and requests are sent by openapi-fetch, typed by path, method,
// parameters and body. An error answer's type is its status's error
// schema, so narrowing on `code` gives its fields (`field` and `errors` of
// an `invalid_request`).
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths };

/** The API's typed client (openapi-fetch), bound to one base URL and key. */
export type PracticeClient = Client<paths>;

/** Every error answer the API gives, by schema. */
export type ApiError =
  | components["schemas"]["ValidationError"]
  | components["schemas"]["ScopeError"]
  | components["schemas"]["NotFoundError"]
  | components["schemas"]["ConflictError"]
  | components["schemas"]["UnauthenticatedError"]
  | components["schemas"]["MalformedBodyError"]
  | components["schemas"]["PayloadTooLargeError"]
  | components["schemas"]["RateLimitError"]
  | components["schemas"]["ServerError"]
  | components["schemas"]["UnavailableError"];

/**
 * practiceClient returns a client of the API at baseUrl (ending in
 * /api/v1) that sends key as its bearer token.
 */
export function practiceClient(baseUrl: string, key: string, fetchImpl?: typeof fetch): PracticeClient {
  // Arrays in a query are comma-separated (the document's style form,
  // explode false: ids=a,b,c), as the API reads them.
  const client = createClient<paths>({
    baseUrl: baseUrl.replace(/\/+$/, ""),
    fetch: fetchImpl,
    querySerializer: { array: { style: "form", explode: false } },
  });
  const auth: Middleware = {
    onRequest({ request }) {
      request.headers.set("Authorization", `Bearer ${key}`);
      return request;
    },
  };
  client.use(auth);
  return client;
}

/** A random Idempotency-Key, for a create without a source record id. */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}

/**
 * pages yields every item of a list, page after page, following each
 * page's cursor until the last (the filters ride in the cursor).
 */
export async function* pages<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ data?: { data: T[]; meta: { next_cursor: string | null } }; error?: ApiError }>,
): AsyncGenerator<T, void, undefined> {
  let cursor: string | undefined;
  for (;;) {
    const { data, error } = await fetchPage(cursor);
    if (error !== undefined || data === undefined) {
      throw new PracticeApiError(error);
    }
    yield* data.data;
    if (data.meta.next_cursor === null) {
      return;
    }
    cursor = data.meta.next_cursor;
  }
}

/** An error answer, thrown by pages: its body, narrowed by `code`. */
export class PracticeApiError extends Error {
  constructor(readonly body: ApiError | undefined) {
    super(body ? `${body.code}: ${body.message}` : "no answer");
  }
}
