/**
 * How the layers below the wiring tell the operator something: a line for a person, and `'warn'`
 * when it reports a failure they may have to act on (src/observe/log.ts writes it at that level).
 * The caller says which, because only it knows: a line's words (an error message quoted in it)
 * do not.
 */
export type LogLine = (line: string, severity?: 'warn') => void;
