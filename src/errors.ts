/**
 * An error caused by what the user gave us (a bad file, a bad flag, a chain that does not verify).
 * The CLI prints its message without a stack and exits non-zero; anything else is a bug.
 */
export class UserError extends Error {
  override name = 'UserError';
}
