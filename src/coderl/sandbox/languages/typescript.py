from __future__ import annotations

import json
import os

from coderl.sandbox.languages.javascript import JavaScript

_PACKAGE = "/usr/share/nodejs/typescript/package.json"
# Strips the types and reports syntax errors only, as SandboxFusion's `tsx` runs TypeScript: a
# program that runs but would fail a full type check is still run (type checking is a lint here).
# A default import of a CommonJS module (`import assert from 'assert'`) is its module.exports, as
# tsx has it (esModuleInterop); without it the program dies on `assert_1.default` being undefined.
_TRANSPILE = (
    "const fs = require('fs'), ts = require('/usr/share/nodejs/typescript');"
    "const src = fs.readFileSync(process.argv[1], 'utf8');"
    "const out = ts.transpileModule(src, {fileName: process.argv[1], reportDiagnostics: true,"
    " compilerOptions: {target: ts.ScriptTarget.ES2020, module: ts.ModuleKind.CommonJS, esModuleInterop: true}});"
    "for (const d of out.diagnostics) {"
    " const at = d.file ? d.file.getLineAndCharacterOfPosition(d.start) : {line: -1, character: -1};"
    " console.error(`main.ts(${at.line + 1},${at.character + 1}): error TS${d.code}: `"
    " + ts.flattenDiagnosticMessageText(d.messageText, '\\n')); }"
    "if (out.diagnostics.length) process.exit(1);"
    "fs.writeFileSync('main.js', out.outputText);"
)


class TypeScript(JavaScript):
    """Transpiled once per submission with Debian's TypeScript compiler, then run by node."""

    name = "typescript"
    aliases = ("ts",)
    source_name = "main.ts"
    compile_argv = ("/usr/bin/node", "-e", _TRANSPILE.replace("{", "{{").replace("}", "}}"), "{src}")  # a template
    artifacts = ("main.js",)
    version_argv = ("node", "--version")
    hello = 'const greeting: string = "hello, coderl";\nconsole.log(greeting);\n'

    @classmethod
    def available(cls) -> bool:
        return super().available() and os.path.exists(_PACKAGE)

    @classmethod
    def version(cls) -> str:
        try:
            with open(_PACKAGE, encoding="utf-8") as f:
                return f"TypeScript {json.load(f)['version']} on node"
        except (OSError, ValueError, KeyError) as exc:
            return f"unknown ({exc})"
