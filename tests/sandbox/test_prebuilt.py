"""What compilers reuse across submissions (coderl.sandbox.languages.prebuilt): C++'s precompiled
headers and javac's class-data archive are used inside the real sandbox, cannot be written there,
and a program GCC must not serve from the PCH compiles exactly as without it."""

from __future__ import annotations

import pytest

from coderl.sandbox import Limits, Program
from coderl.sandbox.languages.cpp import Cpp
from coderl.sandbox.languages.java import Java

LIMITS = Limits(cpu_s=2, wall_s=5)
TOOL_LIMITS = Limits(cpu_s=30, wall_s=90, memory_mb=2048)
needs_pch = pytest.mark.skipif(Cpp.pch() is None, reason="no precompiled headers here (no g++ or cache)")


def _compile_inside(engine, argv: list[str], name: str, source: str) -> tuple[int, str]:
    """Run a compile argv inside the sandbox (through a Python program) on ``source``; its exit
    status and stderr."""
    program = (f"import subprocess\nopen({name!r}, 'w').write({source!r})\n"
               f"done = subprocess.run({argv!r}, capture_output=True, text=True)\n"
               "print(done.returncode)\nprint(done.stderr)")
    result = engine.execute(Program("python", program), [b""], TOOL_LIMITS).results[0]
    assert result.ok, result.stderr
    code, _, stderr = result.stdout.decode().partition("\n")
    return int(code), stderr


@needs_pch
@pytest.mark.parametrize("header", ["bits/stdc++.h", "iostream"])
def test_the_submissions_own_compile_uses_the_precompiled_header(engine, header):
    argv = [*Cpp.recipe("main.cpp", 256)["compile"], "-H", "-Winvalid-pch"]
    code, stderr = _compile_inside(engine, argv, "main.cpp", f"#include <{header}>\nint main() {{ return 0; }}\n")
    assert code == 0 and stderr.splitlines()[0] == f"! {Cpp.pch()}/{header}.gch", stderr[:2000]


@needs_pch
def test_a_macro_defined_first_makes_gcc_read_the_header_and_the_macro_counts(engine):
    """_GLIBCXX_DEBUG before the include: the PCH (built without it) is refused, and the checked
    library the macro asks for is what the program gets (an out-of-range index aborts)."""
    source = ("#define _GLIBCXX_DEBUG\n#include <bits/stdc++.h>\nint main() { std::vector<int> v(2); int i;"
              " std::cin >> i; std::cout << v[i] << std::endl; }\n")
    argv = [*Cpp.recipe("main.cpp", 256)["compile"], "-Winvalid-pch"]
    code, stderr = _compile_inside(engine, argv, "main.cpp", source)
    assert code == 0 and "not used because `_GLIBCXX_DEBUG' is defined" in stderr, stderr[:2000]
    ex = engine.execute(Program("cpp", source), [b"1\n", b"5\n"], LIMITS)
    assert ex.compile.ok and ex.results[0].stdout == b"0\n"
    assert not ex.results[1].ok and b"attempt to subscript container" in ex.results[1].stderr, ex.results[1]


@needs_pch
@pytest.mark.parametrize("head", [
    "#include <vector>\n#include <bits/stdc++.h>\n",  # another header first
    "#include <iostream>\n#include <bits/stdc++.h>\n",
    "#define MAXN 100005\n#include <bits/stdc++.h>\n",  # a macro of the program's first
    '#pragma GCC optimize("O3")\n#include <bits/stdc++.h>\n',
    "#include <bits/stdc++.h>\n#include <ext/pb_ds/assoc_container.hpp>\n#include <ext/pb_ds/tree_policy.hpp>\n",
    '#include "bits/stdc++.h"\n',
])
def test_programs_in_any_include_order_compile_and_run(engine, head):
    source = head + ("using namespace std;\nint main() { int n; cin >> n; vector<long long> v(n);"
                     " iota(v.begin(), v.end(), 1); cout << accumulate(v.begin(), v.end(), 0LL) << endl; }\n")
    ex = engine.execute(Program("cpp", source), [b"10\n"], LIMITS)
    assert ex.compile.ok, ex.compile.message
    assert ex.results[0].stdout == b"55\n" and not ex.compile.run.stderr, ex.compile.run.stderr


@pytest.mark.parametrize("directory", [
    pytest.param(lambda: Cpp.pch(), marks=needs_pch, id="pch"),
    pytest.param(lambda: Java.compiler_archive() and Java.compiler_archive().rsplit("/", 1)[0], id="javac"),
])
def test_nothing_prebuilt_can_be_written_from_inside(engine, directory):
    root = directory()
    if root is None:
        pytest.skip("not built here")
    program = (f"import os\nroot = {root!r}\nhits = []\nfor d, _, names in os.walk(root):\n"
               "    for n in names + ['new']:\n        p = os.path.join(d, n)\n        try:\n"
               "            open(p, 'ab').write(b'poison'); hits.append(p)\n        except OSError:\n            pass\n"
               "print(len(hits), os.path.isdir(root))")
    result = engine.execute(Program("python", program), [b""], LIMITS).results[0]
    assert result.stdout == b"0 True\n", result.stderr


def test_javac_maps_its_class_archive_inside_the_sandbox(engine):
    """-Xshare:on makes the JVM fail where the archive cannot be mapped, instead of falling back."""
    if Java.compiler_archive() is None or "java" not in engine.engine.languages():
        pytest.skip("no javac archive here")
    argv = Java.recipe("Main.java", 256)["compile"]
    argv.insert(1, "-J-Xshare:on")
    code, stderr = _compile_inside(engine, argv, "Main.java", "public class Main { public static void main(String[] a) {} }\n")
    assert code == 0, stderr
