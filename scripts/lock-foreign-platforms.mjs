#!/usr/bin/env node
// The package registry this project installs from serves only some platforms' prebuilt binaries, so
// `npm install` leaves the other platforms' optional packages out of package-lock.json and `npm ci`
// then refuses the lockfile as out of sync. This adds those entries back, tagged with the os/cpu/libc
// their names declare, so npm ci skips them on this platform and installs them where they belong.
// Run it after any `npm install` that changes the lockfile.
import { readFileSync, writeFileSync } from 'node:fs';

const OSES = ['android', 'darwin', 'freebsd', 'linux', 'openbsd', 'sunos', 'win32', 'aix', 'netbsd'];
const CPUS = ['arm64', 'x64', 'arm', 'ia32', 'ppc64', 's390x', 'riscv64', 'loong64'];

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
let added = 0;
for (const [where, entry] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key] || lock.packages[`${where}/${key}`]) continue;
    const parts = name.split('/').pop().split('-');
    const os = parts.find((p) => OSES.includes(p));
    const cpu = parts.find((p) => CPUS.includes(p));
    if (!os || !cpu) continue;
    lock.packages[key] = {
      version,
      cpu: [cpu],
      ...(entry.dev ? { dev: true } : {}),
      ...(os === 'linux' ? { libc: [parts.includes('musl') ? 'musl' : 'glibc'] } : {}),
      optional: true,
      os: [os],
    };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : 1)),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} foreign-platform lock entries`);
