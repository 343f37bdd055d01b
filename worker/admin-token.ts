// The admin token's one rule, kept free of imports so that `npm start`'s checks of .dev.vars
// (scripts/dev-vars.mjs) are tested against the same number.

/** The shortest admin token the service serves admin routes with (`npm start` generates 36 characters). */
export const MIN_ADMIN_TOKEN_CHARS = 32;

/** Why the deployment's ADMIN_TOKEN cannot guard the admin routes (a short token can be guessed), or undefined when it can. */
export function adminTokenProblem(token: string | undefined): string | undefined {
  if (token === undefined || token.length === 0) {
    return `This service has no ADMIN_TOKEN configured, so it serves no admin routes; its operator must set the ADMIN_TOKEN secret (at least ${MIN_ADMIN_TOKEN_CHARS} characters)`;
  }
  if (token.length < MIN_ADMIN_TOKEN_CHARS) {
    return `This service's ADMIN_TOKEN is shorter than ${MIN_ADMIN_TOKEN_CHARS} characters, so it serves no admin routes (a short token can be guessed); its operator must set a longer ADMIN_TOKEN secret`;
  }
  return undefined;
}
