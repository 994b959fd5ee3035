from __future__ import annotations

import gzip
import os

from coderl.sandbox.languages.go import Go

#: where Debian's Go library packages live (golang-github-stretchr-testify-dev and its dependencies)
DEBIAN_GOPATH = "/usr/share/gocode"
_TESTIFY = os.path.join(DEBIAN_GOPATH, "src/github.com/stretchr/testify/assert")
_TESTIFY_CHANGELOG = "/usr/share/doc/golang-github-stretchr-testify-dev/changelog.Debian.gz"
# The binary's output, then the summary line `go test` prints after it; the exit status is the
# binary's (0: every test passed, 1: one failed, 2: a panic).
_RUN = ("./main.test; code=$?; if [ $code -eq 0 ]; then printf 'ok  \\tcommand-line-arguments\\n'; "
        "else printf 'FAIL\\tcommand-line-arguments\\n'; fi; exit $code")


class GoTest(Go):
    """SandboxFusion's ``go_test``: the program is a test file (``func TestX(t *testing.T)``, which
    may import testify as MultiPL-E's Go tests do). ``go test -c`` builds its test binary under the
    compile limits (Go's recipe: GOPATH mode, a private cache seeded from the read-only prebuilt
    one), the run executes it and prints `go test`'s summary line. Offline: testify and its
    dependencies are Debian's packages, read-only under /usr/share/gocode (second on GOPATH), so
    nothing is fetched; without them the language is not offered (a missing library must never
    read as the program's compile error)."""

    name = "go_test"
    aliases = ()
    test_runner = True
    source_name = "main_test.go"
    compile_argv = ("/bin/sh", "-c", "{seed_cache}exec {goroot}/bin/go test -c -o main.test {src}")
    run_argv = ("/bin/sh", "-c", _RUN)
    artifacts = ("main.test",)
    env = {**Go.env, "GOPATH": f"/tmp/gopath:{DEBIAN_GOPATH}"}
    hello = ('package main\nimport (\n\t"fmt"\n\t"testing"\n\t"github.com/stretchr/testify/assert"\n)\n'
             'func TestHello(t *testing.T) {\n\tassert.Equal(t, 2, 1+1)\n\tfmt.Println("hello, coderl")\n}\n')

    @classmethod
    def available(cls) -> bool:
        return super().available() and os.path.isdir(_TESTIFY)

    @classmethod
    def version(cls) -> str:
        """Go's and testify's: testify is linked into the test binary, so the compile cache (keyed
        by the version) must not hand out a binary built on another testify."""
        try:
            with gzip.open(_TESTIFY_CHANGELOG, "rt", encoding="utf-8") as fh:
                testify = fh.readline().split("(", 1)[1].split(")", 1)[0]
        except (OSError, IndexError, EOFError):
            testify = "unknown"
        return f"{super().version()}, testify {testify}"
