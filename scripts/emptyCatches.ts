// `npm test` runs this: a catch in src/ either handles what it caught or logs and counts it
// (src/core/caught.ts), so an empty one (`catch {}`, `.catch(() => {})`) fails the test command,
// each named by file and line. A comment alone does not make a catch handle anything.

import { nodes, parse, sourceFiles } from './sourceFiles.ts';

type Node = Record<string, unknown> & { type: string };

const isEmptyBlock = (node: unknown) =>
  ['BlockStatement', 'FunctionBody'].includes((node as Node | null)?.type ?? '') &&
  ((node as { stmts: unknown[] }).stmts?.length ?? 0) === 0;

/** A handler that does nothing: `() => {}`, `function () {}`, `() => undefined`. */
function doesNothing(node: Node): boolean {
  if (node.type !== 'ArrowFunctionExpression' && node.type !== 'FunctionExpression') return false;
  const body = node.body as Node | undefined;
  if (body === undefined) return false;
  return isEmptyBlock(body) || (body.type === 'Identifier' && body.value === 'undefined');
}

const found: string[] = [];
for (const path of sourceFiles(['src'])) {
  const file = parse(path);
  for (const node of nodes(file.module)) {
    if (node.type === 'CatchClause' && isEmptyBlock(node.body))
      found.push(`${path}:${file.line(node.span as { start: number })}: an empty catch block`);
    if (node.type !== 'CallExpression') continue;
    let callee = node.callee as Node;
    // `a?.catch(…)`: swc wraps the member in an optional chain.
    while (callee.type === 'OptionalChainingExpression') callee = callee.base as Node;
    const property = callee.type === 'MemberExpression' ? (callee.property as Node) : null;
    const name = property?.type === 'Identifier' ? property.value : null;
    // The rejection handler: .catch's first argument, .then's second.
    const at = name === 'catch' ? 0 : name === 'then' ? 1 : null;
    const handler = at === null ? undefined : (node.arguments as Array<{ expression: Node }>)[at]?.expression;
    if (handler && doesNothing(handler))
      found.push(
        `${path}:${file.line(node.span as { start: number })}: .${name} with a rejection handler that does nothing`,
      );
  }
}
if (found.length > 0) {
  process.stderr.write(
    `${found.join('\n')}\n${found.length} catch(es) neither handle nor log and count what they catch: handle it, call caught(), or say where it is met with metElsewhere() or afterSettled() (src/core/caught.ts)\n`,
  );
  process.exit(1);
}
