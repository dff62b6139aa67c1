package phases

// Each phase function's reference (engine.Documented) is its Doc method,
// beside the function: `nac funcs` prints them and docs/functions.md is
// generated from them.

// apiRetried is the errors sentence every function that calls the API
// server shares.
const apiRetried = "API errors are retried with backoff up to the phase's retries; "
