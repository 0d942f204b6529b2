// SPDX-License-Identifier: Apache-2.0
// Generates the TypeScript for the wire schema (schemas/molt_wire.fbs -> src/wire/) and the
// examples' payloads (plugins/counter/counter.fbs -> examples/counter/src/gen/,
// plugins/walk/walk.fbs -> examples/walk/src/gen/) with flatc --ts
// (Debian: flatbuffers-compiler), then gives every relative import its ".js" so the output is
// ES modules a browser and Node load as they are.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pkg = resolve(here, '..');
const repo = resolve(pkg, '../..');
const flatc = process.env.FLATC || 'flatc';

function generate(schema, out) {
  rmSync(out, { recursive: true, force: true });
  try {
    execFileSync(flatc, ['--ts', '-o', out, schema], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch (e) {
    const why = e.code === 'ENOENT' ? `${flatc} not found` : e.message;
    console.error(`gen: flatc --ts ${schema} failed (${why}): install Debian's flatbuffers-compiler ` +
                  `(scripts/install-deps.sh does) or set FLATC`);
    process.exit(1);
  }
  for (const file of walk(out)) {
    const text = readFileSync(file, 'utf8');
    writeFileSync(file, text.replace(/from '(\.{1,2}\/[^']+?)(\.js)?'/g, "from '$1.js'"));
  }
}

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      yield* walk(path);
    } else if (path.endsWith('.ts')) {
      yield path;
    }
  }
}

generate(join(repo, 'schemas/molt_wire.fbs'), join(pkg, 'src/wire'));
generate(join(repo, 'plugins/counter/counter.fbs'), join(pkg, 'examples/counter/src/gen'));
generate(join(repo, 'plugins/walk/walk.fbs'), join(pkg, 'examples/walk/src/gen'));
