import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  concat,
  encodeAbiParameters,
  type Hex,
  hashDomain,
  hashStruct,
  hashTypedData,
  keccak256,
  toHex as viemToHex,
} from 'viem';
import { type TypedData, TypedDataError, typedDataDigest, typedDataOf } from './eip712.ts';
import { toHex } from './hex.ts';

// The oracle is viem's hashTypedData, an implementation independent of ours (forked from MetaMask's
// eth-sig-util). Documents go through JSON first, as eth_signTypedData_v4 receives them; for viem,
// integer values are turned into bigints by their declared type (viem takes numbers and bigints).

type Types = TypedData['types'];

/** Our digest of `doc` as a client would send it (JSON text, parsed). */
function ours(doc: unknown): Hex {
  return toHex(typedDataDigest(typedDataOf(JSON.parse(JSON.stringify(doc)))));
}

/** `value` of EIP-712 `type` with its integers as bigints, for viem. */
function forViem(type: string, value: unknown, types: Types): unknown {
  const array = /^(.*)\[(\d*)\]$/.exec(type);
  if (array) return (value as unknown[]).map((item) => forViem(array[1] as string, item, types));
  const fields = types[type];
  if (fields) {
    const struct = value as Record<string, unknown>;
    return Object.fromEntries(fields.map((f) => [f.name, forViem(f.type, struct[f.name], types)]));
  }
  if (/^u?int[0-9]*$/.test(type)) return BigInt(value as string | number);
  return value;
}

function viemDigest(doc: TypedData): Hex {
  return hashTypedData({
    types: doc.types,
    primaryType: doc.primaryType,
    domain: forViem('EIP712Domain', doc.domain, doc.types),
    message: forViem(doc.primaryType, doc.message, doc.types),
  } as unknown as Parameters<typeof hashTypedData>[0]);
}

/** Asserts our digest equals viem's, and returns it. */
function agrees(doc: TypedData): Hex {
  const digest = ours(doc);
  assert.equal(digest, viemDigest(doc));
  return digest;
}

function refuses(doc: unknown, message: string | RegExp): void {
  assert.throws(
    () => typedDataDigest(typedDataOf(JSON.parse(JSON.stringify(doc)))),
    (e: unknown) => {
      assert.ok(e instanceof TypedDataError, `expected a TypedDataError, got ${String(e)}`);
      if (typeof message === 'string') assert.equal(e.message, message);
      else assert.match(e.message, message);
      return true;
    },
  );
}

const DOMAIN_TYPE = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
];
const DOMAIN = {
  name: 'Test',
  version: '1',
  chainId: 1,
  verifyingContract: '0xcccccccccccccccccccccccccccccccccccccccc',
};

/** A document of one struct type `T` with `fields`, other struct types, and `message`. */
function single(
  fields: Array<{ name: string; type: string }>,
  message: Record<string, unknown>,
  more: Types = {},
): TypedData {
  return {
    types: { EIP712Domain: DOMAIN_TYPE, T: fields, ...more },
    primaryType: 'T',
    domain: DOMAIN,
    message,
  };
}

/** The EIP-712 specification's example (eips.ethereum.org/EIPS/eip-712, Example.js). */
const MAIL: TypedData = {
  types: {
    EIP712Domain: DOMAIN_TYPE,
    Person: [
      { name: 'name', type: 'string' },
      { name: 'wallet', type: 'address' },
    ],
    Mail: [
      { name: 'from', type: 'Person' },
      { name: 'to', type: 'Person' },
      { name: 'contents', type: 'string' },
    ],
  },
  primaryType: 'Mail',
  domain: {
    name: 'Ether Mail',
    version: '1',
    chainId: 1,
    verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC',
  },
  message: {
    from: { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' },
    to: { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' },
    contents: 'Hello, Bob!',
  },
};

describe('typedDataDigest against viem', () => {
  it("the specification's Mail example (a struct type referenced twice)", () => {
    const digest = agrees(MAIL);
    // The digest the specification's Example.js prints.
    assert.equal(digest, '0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2');
  });

  it('is sensitive to every part: domain, message, field order, type names', () => {
    const base = ours(MAIL);
    const changed = (f: (doc: TypedData) => void) => {
      const doc = structuredClone(MAIL);
      f(doc);
      return doc;
    };
    for (const doc of [
      changed((d) => {
        d.domain.chainId = 2;
      }),
      changed((d) => {
        (d.message.to as Record<string, unknown>).name = 'Bobby';
      }),
      changed((d) => {
        d.types.Person?.reverse();
      }),
      changed((d) => {
        d.types.Human = d.types.Person as Types[string];
        delete d.types.Person;
        for (const f of d.types.Mail ?? []) if (f.type === 'Person') f.type = 'Human';
      }),
    ]) {
      const digest = agrees(doc);
      assert.notEqual(digest, base);
    }
  });

  it('nested structs, dependencies sorted by name whatever their depth', () => {
    const doc: TypedData = {
      types: {
        EIP712Domain: DOMAIN_TYPE,
        Order: [
          { name: 'maker', type: 'Party' },
          { name: 'item', type: 'Item' },
          { name: 'meta', type: 'Meta' },
        ],
        Party: [
          { name: 'wallet', type: 'address' },
          { name: 'label', type: 'string' },
        ],
        Item: [
          { name: 'asset', type: 'Asset' },
          { name: 'amount', type: 'uint256' },
        ],
        Asset: [
          { name: 'kind', type: 'uint8' },
          { name: 'token', type: 'address' },
        ],
        Meta: [
          { name: 'salt', type: 'bytes32' },
          { name: 'note', type: 'bytes' },
        ],
        Unused: [{ name: 'x', type: 'uint256' }],
      },
      primaryType: 'Order',
      domain: DOMAIN,
      message: {
        maker: { wallet: `0x${'12'.repeat(20)}`, label: 'maker' },
        item: { asset: { kind: 2, token: `0x${'34'.repeat(20)}` }, amount: '1000000000000000000000' },
        meta: { salt: `0x${'5a'.repeat(32)}`, note: '0xdeadbeef' },
      },
    };
    agrees(doc);
  });

  it('atomic types of several widths, at their limits', () => {
    const fields = [
      { name: 'yes', type: 'bool' },
      { name: 'no', type: 'bool' },
      { name: 'i8min', type: 'int8' },
      { name: 'i8max', type: 'int8' },
      { name: 'i64', type: 'int64' },
      { name: 'i256min', type: 'int256' },
      { name: 'minus1', type: 'int256' },
      { name: 'u8', type: 'uint8' },
      { name: 'u16', type: 'uint16' },
      { name: 'u128', type: 'uint128' },
      { name: 'u256max', type: 'uint256' },
      { name: 'b1', type: 'bytes1' },
      { name: 'b4', type: 'bytes4' },
      { name: 'b32', type: 'bytes32' },
      { name: 'dyn', type: 'bytes' },
      { name: 'emptyBytes', type: 'bytes' },
      { name: 'text', type: 'string' },
      { name: 'emptyText', type: 'string' },
      { name: 'unicode', type: 'string' },
      { name: 'who', type: 'address' },
    ];
    const message = {
      yes: true,
      no: false,
      i8min: -128,
      i8max: 127,
      i64: '-9223372036854775808',
      i256min: `-${(1n << 255n).toString()}`,
      minus1: -1,
      u8: 255,
      u16: '0xffff',
      u128: ((1n << 128n) - 1n).toString(),
      u256max: `0x${'f'.repeat(64)}`,
      b1: '0xff',
      b4: '0x01020304',
      b32: `0x${'ab'.repeat(32)}`,
      dyn: `0x${'00ff'.repeat(100)}`,
      emptyBytes: '0x',
      text: 'hello',
      emptyText: '',
      unicode: 'Grüße, 世界 🌍',
      who: `0x${'9a'.repeat(20)}`,
    };
    agrees(single(fields, message));
  });

  it('an integer as a JSON number, a decimal string or 0x hex encodes the same', () => {
    const fields = [
      { name: 'a', type: 'uint256' },
      { name: 'b', type: 'int32' },
    ];
    const asNumbers = ours(single(fields, { a: 42, b: -7 }));
    assert.equal(ours(single(fields, { a: '42', b: '-7' })), asNumbers);
    assert.equal(ours(single(fields, { a: '0x2a', b: -7 })), asNumbers);
    assert.equal(ours(single(fields, { a: '0x2A', b: '-7' })), asNumbers);
    assert.equal(viemDigest(single(fields, { a: 42, b: -7 })), asNumbers);
  });

  it('dynamic and fixed arrays of atomic types, nested arrays, empty arrays', () => {
    const fields = [
      { name: 'nums', type: 'uint256[]' },
      { name: 'three', type: 'uint8[3]' },
      { name: 'negatives', type: 'int16[]' },
      { name: 'texts', type: 'string[]' },
      { name: 'blobs', type: 'bytes[]' },
      { name: 'words', type: 'bytes32[]' },
      { name: 'who', type: 'address[]' },
      { name: 'flags', type: 'bool[]' },
      { name: 'grid', type: 'uint256[][]' },
      { name: 'fixedOfDynamic', type: 'uint256[][2]' },
      { name: 'none', type: 'uint256[]' },
      { name: 'noTexts', type: 'string[]' },
    ];
    const message = {
      nums: [1, '2', '0x3'],
      three: [7, 8, 9],
      negatives: [-32768, 32767, 0],
      texts: ['a', '', 'ccc'],
      blobs: ['0x', '0x01', '0x0203'],
      words: [`0x${'11'.repeat(32)}`, `0x${'22'.repeat(32)}`],
      who: [`0x${'aa'.repeat(20)}`, `0x${'bb'.repeat(20)}`],
      flags: [true, false, true],
      grid: [[1, 2], [], [3]],
      fixedOfDynamic: [[1], [2, 3]],
      none: [],
      noTexts: [],
    };
    agrees(single(fields, message));
  });

  it('arrays of structs, and structs holding arrays of structs', () => {
    const more: Types = {
      Person: [
        { name: 'name', type: 'string' },
        { name: 'wallets', type: 'address[]' },
      ],
      Group: [
        { name: 'name', type: 'string' },
        { name: 'members', type: 'Person[]' },
      ],
    };
    const alice = { name: 'Alice', wallets: [`0x${'a1'.repeat(20)}`, `0x${'a2'.repeat(20)}`] };
    const bob = { name: 'Bob', wallets: [] };
    const doc = single(
      [
        { name: 'owner', type: 'Person' },
        { name: 'groups', type: 'Group[]' },
        { name: 'pair', type: 'Person[2]' },
        { name: 'nobody', type: 'Person[]' },
      ],
      {
        owner: alice,
        groups: [
          { name: 'g1', members: [alice, bob] },
          { name: 'g2', members: [] },
        ],
        pair: [bob, alice],
        nobody: [],
      },
      more,
    );
    agrees(doc);
  });

  it('a recursive type', () => {
    const more: Types = {
      Node: [
        { name: 'value', type: 'uint256' },
        { name: 'children', type: 'Node[]' },
      ],
    };
    const leaf = (value: number) => ({ value, children: [] });
    agrees(
      single(
        [{ name: 'root', type: 'Node' }],
        { root: { value: 1, children: [leaf(2), { value: 3, children: [leaf(4)] }] } },
        more,
      ),
    );
  });

  it('domains of other shapes: a salt, a few fields, none at all', () => {
    const salted = {
      ...single([{ name: 'x', type: 'uint256' }], { x: 1 }),
      types: {
        EIP712Domain: [...DOMAIN_TYPE, { name: 'salt', type: 'bytes32' }],
        T: [{ name: 'x', type: 'uint256' }],
      },
      domain: { ...DOMAIN, salt: `0x${'5a'.repeat(32)}` },
    };
    agrees(salted);
    agrees({
      types: { EIP712Domain: [{ name: 'name', type: 'string' }], T: [{ name: 'x', type: 'uint256' }] },
      primaryType: 'T',
      domain: { name: 'only a name' },
      message: { x: 1 },
    });
    agrees({
      types: { EIP712Domain: [], T: [{ name: 'x', type: 'uint256' }] },
      primaryType: 'T',
      domain: {},
      message: { x: 1 },
    });
    // chainId as hex text, as wallets often send it.
    assert.equal(ours({ ...MAIL, domain: { ...MAIL.domain, chainId: '0x1' } }), ours(MAIL));
  });

  it('fields in the data but not in its type are ignored', () => {
    const doc = structuredClone(MAIL);
    doc.message.extra = 'ignored';
    (doc.message.from as Record<string, unknown>).age = 3;
    doc.domain.salt = `0x${'00'.repeat(32)}`; // not in this EIP712Domain
    assert.equal(ours(doc), ours(MAIL));
  });
});

describe('typedDataDigest where it differs from viem on purpose', () => {
  it('addresses in any case: viem refuses a mixed case that is not the checksum', () => {
    // Ours reads an address as 20 bytes and checks no checksum (neither does geth's encoder);
    // viem's isAddress refuses mixed case that is not EIP-55.
    const badChecksum = structuredClone(MAIL);
    (badChecksum.message.to as Record<string, unknown>).wallet = '0xBBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB';
    assert.equal(ours(badChecksum), ours(MAIL));
    assert.throws(() => viemDigest(badChecksum));
  });

  it('a bytesN shorter than N is right-padded (viem refuses it)', () => {
    // MetaMask's eth-sig-util pads as Solidity's bytesN does; viem insists on exactly N bytes.
    const fields = [{ name: 'b', type: 'bytes4' }];
    const short = single(fields, { b: '0x0102' });
    assert.equal(ours(short), viemDigest(single(fields, { b: '0x01020000' })));
    assert.throws(() => viemDigest(short));
    refuses(single(fields, { b: '0x0102030405' }), 'message.b: a bytes4 holds at most 4 bytes');
  });

  it('bare int and uint are 256-bit, named as written in the type (viem refuses them)', () => {
    // EIP-712 lists only sized integers; MetaMask's v4 encoder and geth's validator take bare
    // `int`/`uint` as 256 bits, with the type string keeping the bare name.
    const doc = single(
      [
        { name: 'x', type: 'uint' },
        { name: 'y', type: 'int' },
      ],
      { x: 5, y: -1 },
    );
    const message = hashStruct({ data: { x: 5n, y: -1n }, primaryType: 'T', types: doc.types } as never);
    const manual = keccak256(
      encodeAbiParameters(
        [{ type: 'bytes32' }, { type: 'uint256' }, { type: 'int256' }],
        [keccak256(viemToHex('T(uint x,int y)')), 5n, -1n],
      ),
    );
    assert.equal(message, manual);
    const domain = hashDomain({ domain: DOMAIN, types: doc.types } as never);
    assert.equal(ours(doc), keccak256(concat(['0x1901', domain, message])));
    assert.throws(() => viemDigest(doc));
    refuses(
      single([{ name: 'x', type: 'uint' }], { x: `0x1${'0'.repeat(64)}` }),
      'message.x: out of range for uint',
    );
  });

  it('a missing struct value is the zero word (viem throws)', () => {
    // MetaMask's v4 encoding, which wallets follow: an absent nested struct hashes as 32 zero bytes.
    const more: Types = { Inner: [{ name: 'x', type: 'uint256' }] };
    const fields = [
      { name: 'inner', type: 'Inner' },
      { name: 'n', type: 'uint256' },
    ];
    const types = { EIP712Domain: DOMAIN_TYPE, T: fields, ...more };
    const message = keccak256(
      encodeAbiParameters(
        [{ type: 'bytes32' }, { type: 'bytes32' }, { type: 'uint256' }],
        [keccak256(viemToHex('T(Inner inner,uint256 n)Inner(uint256 x)')), `0x${'00'.repeat(32)}`, 7n],
      ),
    );
    const expected = keccak256(concat(['0x1901', hashDomain({ domain: DOMAIN, types } as never), message]));
    assert.equal(ours(single(fields, { n: 7 }, more)), expected);
    assert.equal(ours(single(fields, { inner: null, n: 7 }, more)), expected);
    assert.throws(() => viemDigest(single(fields, { n: 7 }, more)));
  });

  it('primaryType EIP712Domain hashes the message as a domain, as geth does (viem leaves it out)', () => {
    // geth's apitypes.TypedDataAndHash always appends hashStruct(primaryType, message); viem and
    // MetaMask sign 0x1901 ‖ domainSeparator alone. Ours follows geth.
    const doc: TypedData = {
      types: { EIP712Domain: DOMAIN_TYPE },
      primaryType: 'EIP712Domain',
      domain: DOMAIN,
      message: { ...DOMAIN, name: 'Other' },
    };
    const domain = hashDomain({ domain: DOMAIN, types: doc.types } as never);
    const message = hashDomain({ domain: doc.message, types: doc.types } as never);
    assert.equal(ours(doc), keccak256(concat(['0x1901', domain, message])));
    assert.equal(viemDigest(doc), keccak256(concat(['0x1901', domain])));
  });

  it('a fixed-size array must have its size (viem does not check)', () => {
    const fields = [{ name: 'xs', type: 'uint8[3]' }];
    refuses(single(fields, { xs: [1, 2] }), 'message.xs: a uint8[3] must have 3 items, not 2');
    assert.doesNotThrow(() => viemDigest(single(fields, { xs: [1, 2] })));
  });

  it('a JSON number past 2^53 is refused: it lost digits on the way (viem never sees JSON)', () => {
    refuses(
      single([{ name: 'x', type: 'uint256' }], { x: 2 ** 53 }),
      'message.x: a uint256 must be an integer, a decimal string or 0x hex',
    );
    assert.doesNotThrow(() => ours(single([{ name: 'x', type: 'uint256' }], { x: 2 ** 53 - 1 })));
  });
});

describe('typedDataDigest refusals', () => {
  it('integers out of range for their width', () => {
    const one = (type: string, x: unknown) => single([{ name: 'x', type }], { x });
    refuses(one('uint8', 256), 'message.x: out of range for uint8');
    refuses(one('uint8', -1), 'message.x: out of range for uint8');
    refuses(one('int8', 128), 'message.x: out of range for int8');
    refuses(one('int8', -129), 'message.x: out of range for int8');
    refuses(one('uint256', `0x1${'0'.repeat(64)}`), 'message.x: out of range for uint256');
    refuses(one('int256', (1n << 255n).toString()), 'message.x: out of range for int256');
    assert.doesNotThrow(() => ours(one('int256', `-${(1n << 255n).toString()}`)));
  });

  it('integers in a form it does not read', () => {
    const message = 'message.x: a uint256 must be an integer, a decimal string or 0x hex';
    for (const x of [1.5, '1.5', '0x', '', 'ten', '1e3', true, [], '-0x1', `1${'0'.repeat(80)}`]) {
      refuses(single([{ name: 'x', type: 'uint256' }], { x }), message);
    }
  });

  it('values of the wrong JSON type', () => {
    refuses(single([{ name: 'x', type: 'string' }], { x: 1 }), 'message.x: a string must be a JSON string');
    refuses(single([{ name: 'x', type: 'bool' }], { x: 'true' }), 'message.x: a bool must be true or false');
    refuses(single([{ name: 'x', type: 'bool' }], { x: 1 }), 'message.x: a bool must be true or false');
    refuses(
      single([{ name: 'x', type: 'address' }], { x: '0x1234' }),
      'message.x: an address must be 0x and 40 hex digits',
    );
    refuses(
      single([{ name: 'x', type: 'address' }], { x: 'ab'.repeat(20) }),
      'message.x: an address must be 0x and 40 hex digits',
    );
    refuses(
      single([{ name: 'x', type: 'bytes' }], { x: '0x123' }),
      'message.x: a bytes must be 0x and an even number of hex digits',
    );
    refuses(
      single([{ name: 'x', type: 'bytes' }], { x: 'abcd' }),
      'message.x: a bytes must be 0x and an even number of hex digits',
    );
    refuses(
      single([{ name: 'x', type: 'bytes32' }], { x: 5 }),
      'message.x: a bytes32 must be 0x and an even number of hex digits',
    );
    refuses(single([{ name: 'x', type: 'uint256[]' }], { x: 5 }), 'message.x: a uint256[] must be an array');
    refuses(
      single([{ name: 'p', type: 'P' }], { p: 'not an object' }, { P: [{ name: 'x', type: 'uint8' }] }),
      'message.p: a P must be an object',
    );
  });

  it('a missing atomic value', () => {
    refuses(single([{ name: 'x', type: 'uint256' }], {}), 'message.x: missing uint256 value');
    refuses(single([{ name: 'x', type: 'string' }], { x: null }), 'message.x: missing string value');
    refuses({ ...MAIL, domain: { name: 'Ether Mail' } }, 'domain.version: missing string value');
  });

  it('names the path into nested structs and arrays', () => {
    refuses(
      single(
        [{ name: 'groups', type: 'G[]' }],
        { groups: [{ xs: [1, 2] }, { xs: [3, 300] }] },
        { G: [{ name: 'xs', type: 'uint8[]' }] },
      ),
      'message.groups[1].xs[1]: out of range for uint8',
    );
  });

  it('types it does not know', () => {
    for (const type of [
      'uint7',
      'uint0',
      'uint264',
      'int9',
      'bytes0',
      'bytes33',
      'byte',
      'string32',
      'Nope',
      'address payable',
    ]) {
      refuses(single([{ name: 'x', type }], { x: 1 }), `message.x: unknown type ${type}`);
    }
  });

  it('nesting past 64 levels', () => {
    const more: Types = { Node: [{ name: 'next', type: 'Node' }] };
    let node: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) node = { next: node };
    refuses(single([{ name: 'root', type: 'Node' }], { root: node }, more), /nested more than 64 deep$/);
    let shallow: Record<string, unknown> = {};
    for (let i = 0; i < 10; i++) shallow = { next: shallow };
    assert.doesNotThrow(() => ours(single([{ name: 'root', type: 'Node' }], { root: shallow }, more)));
    let nested: unknown = 1;
    for (let i = 0; i < 100; i++) nested = [nested];
    refuses(
      single([{ name: 'x', type: `uint8${'[]'.repeat(100)}` }], { x: nested }),
      /nested more than 64 deep$/,
    );
  });

  it('a type named like an Object.prototype member is unknown, not an internal error', () => {
    // `types` comes from JSON.parse, so types.constructor, types.toString and types.__proto__ are
    // found on Object.prototype; the encoder then iterates a function as a field list.
    refuses(
      { types: { EIP712Domain: [] }, primaryType: 'constructor', domain: {}, message: {} },
      /constructor/,
    );
    refuses(single([{ name: 'x', type: 'toString' }], { x: {} }), 'message.x: unknown type toString');
    refuses(single([{ name: 'x', type: '__proto__' }], { x: {} }), 'message.x: unknown type __proto__');
  });
});

describe('typedDataOf', () => {
  const valid = JSON.parse(JSON.stringify(MAIL)) as Record<string, unknown>;
  const without = (key: string) => Object.fromEntries(Object.entries(valid).filter(([k]) => k !== key));

  const bad = (value: unknown, message: string) =>
    assert.throws(
      () => typedDataOf(value),
      (e: unknown) => e instanceof TypedDataError && e.message === message,
    );

  it('passes a well-formed document through as it is', () => {
    assert.equal(typedDataOf(valid), valid);
  });

  it('refuses what is not an object', () => {
    for (const value of [null, [], 'typed data', 1]) bad(value, 'typed data must be an object');
  });

  it('needs types as an object of field lists', () => {
    bad(without('types'), 'types must be an object of struct definitions');
    bad({ ...valid, types: [] }, 'types must be an object of struct definitions');
    bad({ ...valid, types: { ...MAIL.types, Mail: {} } }, 'types.Mail must be an array of {name, type}');
    bad(
      { ...valid, types: { ...MAIL.types, Mail: [{ name: 'x' }] } },
      'types.Mail[0] must be {name: string, type: string}',
    );
    bad(
      {
        ...valid,
        types: {
          ...MAIL.types,
          Mail: [
            { name: 'x', type: 'string' },
            { name: 1, type: 'string' },
          ],
        },
      },
      'types.Mail[1] must be {name: string, type: string}',
    );
    bad(
      { ...valid, types: { ...MAIL.types, Mail: ['string x'] } },
      'types.Mail[0] must be {name: string, type: string}',
    );
  });

  it('needs a primaryType among the types', () => {
    bad(without('primaryType'), 'primaryType must be a string');
    bad({ ...valid, primaryType: 1 }, 'primaryType must be a string');
    bad({ ...valid, primaryType: 'Letter' }, 'primaryType Letter is not among the types');
  });

  it('needs EIP712Domain among the types', () => {
    const { EIP712Domain: _, ...types } = MAIL.types;
    bad({ ...valid, types }, 'types must define EIP712Domain');
  });

  it('needs domain and message objects', () => {
    bad(without('domain'), 'domain must be an object');
    bad({ ...valid, domain: [] }, 'domain must be an object');
    bad(without('message'), 'message must be an object');
    bad({ ...valid, message: 'hello' }, 'message must be an object');
  });
});
