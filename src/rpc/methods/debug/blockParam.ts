import { type BlockSelector, blockSelector, ParamProblem } from '../../params.ts';

/**
 * The block parameter of geth's debug namespace: our profile's forms except the decimal string, which
 * geth rejects there and the execution-apis fixtures (debug_getRaw*, get-invalid-number) pin as an
 * error. Everything else goes through the shared parser.
 */
export function debugBlockSelector(value: unknown): BlockSelector {
  if (typeof value === 'string' && /^[0-9]+$/.test(value))
    throw new ParamProblem('hex string without 0x prefix');
  return blockSelector(value);
}
