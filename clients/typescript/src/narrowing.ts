// Compiled by `tsc` (npm run build), this file is the test that the
// generated error types narrow on `code`: each branch reads a field only
// its code's schema has. The @ts-expect-error lines are where narrowing
// must refuse a field: were every error one type with every code, they
// would compile, and tsc fails on an unused @ts-expect-error.
import type { ApiError } from "./index.js";

export function explain(e: ApiError): string {
  if (e.code === "invalid_request" || e.code === "already_exists") {
    // ValidationError: field and errors are there.
    return `${e.field}: ${e.errors.map((p) => `${p.field} ${p.message}`).join("; ")} ${e.existing_id ?? ""}`;
  }
  if (e.code === "insufficient_scope") {
    // @ts-expect-error a ScopeError has no field
    void e.field;
    return `needs ${e.required_scope}`;
  }
  if (e.code === "idempotency_key_reused" || e.code === "concurrent_change") {
    // @ts-expect-error a ConflictError has no required_scope
    void e.required_scope;
    return e.message;
  }
  // @ts-expect-error not every error has a field
  void e.field;
  return `${e.code}: ${e.message}`;
}
