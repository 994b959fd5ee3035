"""What compilers reuse across submissions (coderl.sandbox.languages.prebuilt): C++'s precompiled
headers and javac's class-data archive are used inside the real sandbox, under /coderl/toolchain
whatever the host's cache path (which the sandbox must not show), cannot be written there, and a
program GCC must not serve from the PCH compiles exactly as without it; ``--isolation none`` uses
them at their host path."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from coderl.cache import default_cache_dir
from coderl.sandbox import Limits, Program, isolation
from coderl.sandbox.blocking import BlockingEngine
from coderl.sandbox.languages import prebuilt
from coderl.sandbox.languages.cpp import Cpp
from coderl.sandbox.languages.java import Java
from coderl.sandbox.languages.prebuilt import inside
from tests.helpers.require import needs, require

LIMITS = Limits(cpu_s=2, wall_s=5)
TOOL_LIMITS = Limits(cpu_s=30, wall_s=90, memory_mb=2048)
#: prints 1 where the submission's own compile has the PCH directory on its include path (only it holds a .gch)
PCH_ON_INCLUDE_PATH = ("#include <iostream>\n#if __has_include(<bits/stdc++.h.gch>)\n#define ON 1\n#else\n"
                       "#define ON 0\n#endif\nint main() { std::cout << ON << std::endl; }\n")
needs_pch = needs(Cpp.pch() is not None, "no precompiled headers here (no g++ or cache; scripts/setup.sh builds them)")


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
    assert code == 0 and stderr.splitlines()[0] == f"! {inside(Cpp.pch())}/{header}.gch", stderr[:2000]


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
    require(directory() is not None, "not built here (scripts/setup.sh builds it)")
    root = inside(directory())
    program = (f"import os\nroot = {root!r}\nhits = []\nfor d, _, names in os.walk(root):\n"
               "    for n in names + ['new']:\n        p = os.path.join(d, n)\n        try:\n"
               "            open(p, 'ab').write(b'poison'); hits.append(p)\n        except OSError:\n            pass\n"
               "print(len(hits), os.path.isdir(root))")
    result = engine.execute(Program("python", program), [b""], LIMITS).results[0]
    assert result.stdout == b"0 True\n", result.stderr


def test_javac_maps_its_class_archive_inside_the_sandbox(engine):
    """-Xshare:on makes the JVM fail where the archive cannot be mapped, instead of falling back."""
    require(Java.compiler_archive() is not None and "java" in engine.engine.languages(),
            "no javac archive here (scripts/setup.sh builds it)")
    argv = Java.recipe("Main.java", 256)["compile"]
    argv.insert(1, "-J-Xshare:on")
    code, stderr = _compile_inside(engine, argv, "Main.java", "public class Main { public static void main(String[] a) {} }\n")
    assert code == 0, stderr


@pytest.fixture()
def cache_under_var_tmp():
    """``CODERL_CACHE`` in a fresh directory under /var/tmp (which the sandbox does not show), its
    ``toolchain`` a link to the default cache's, so nothing is rebuilt; the getters' memo is
    cleared on the way in and out, so they name the directory in force."""
    Cpp.pch(), Java.compiler_archive()  # built (once per machine) in the default cache first
    real = default_cache_dir().absolute() / "toolchain"
    cache = Path(tempfile.mkdtemp(prefix="coderl-hostcache-", dir="/var/tmp"))
    (cache / "toolchain").symlink_to(real)
    before = os.environ.get("CODERL_CACHE")
    os.environ["CODERL_CACHE"] = str(cache)
    prebuilt.cpp_pch.cache_clear()
    prebuilt.jvm_archive.cache_clear()
    try:
        yield cache, real
    finally:
        if before is None:
            del os.environ["CODERL_CACHE"]
        else:
            os.environ["CODERL_CACHE"] = before
        prebuilt.cpp_pch.cache_clear()
        prebuilt.jvm_archive.cache_clear()
        shutil.rmtree(cache)


@needs_pch
def test_the_sandbox_sees_no_part_of_the_host_cache_path(cache_under_var_tmp):
    """Regression: the prebuilt directories were bound at their host path, so a program saw
    ``$CODERL_CACHE`` (a home directory, a checkout). Now they are under /coderl/toolchain only, and
    C++ still compiles on the PCH and javac still maps its archive (-Xshare:on fails otherwise).
    Not covered: /proc/self/mountinfo names each bind's source path (every bind's, the runner's too)."""
    cache, real = cache_under_var_tmp
    archive = Java.compiler_archive()
    assert Cpp.pch().startswith(str(cache)) and (archive is None or archive.startswith(str(cache)))
    # every part of the cache path, and the default cache the link leads to (its parents, /root say,
    # may hold what the sandbox binds on purpose: the sandbox's Python)
    parts = [str(p) for p in (cache, *cache.parents, real, real.parent) if str(p) != "/"]
    with BlockingEngine(slots=1, compile_cache=False) as eng:
        probe = (f"import os, sys\nprint(sorted(p for p in {parts!r} if os.path.exists(p)))\n"
                 "print(os.environ, os.getcwd(), sys.argv, sys.path)")
        out = eng.execute(Program("python", probe), [b""], LIMITS).results[0].stdout.decode()
        assert out.startswith("[]\n") and str(cache) not in out and str(real) not in out, out
        cpp = [*Cpp.recipe("main.cpp", 256)["compile"], "-H", "-Winvalid-pch"]
        assert not any(str(cache) in arg for arg in cpp), cpp
        code, stderr = _compile_inside(eng, cpp, "main.cpp", "#include <bits/stdc++.h>\nint main() { return 0; }\n")
        assert code == 0 and stderr.splitlines()[0] == f"! {inside(Cpp.pch())}/bits/stdc++.h.gch", stderr[:2000]
        if archive is not None:
            javac = Java.recipe("Main.java", 256)["compile"]
            javac.insert(1, "-J-Xshare:on")
            assert not any(str(cache) in arg for arg in javac), javac
            code, stderr = _compile_inside(eng, javac, "Main.java", "public class Main { public static void main(String[] a) {} }\n")
            assert code == 0, stderr
        ex = eng.execute(Program("cpp", PCH_ON_INCLUDE_PATH), [b""], LIMITS)
        assert ex.compile.ok and ex.results[0].stdout == b"1\n", ex.compile.message


@needs_pch
def test_without_isolation_the_compile_uses_the_host_path(tmp_path):
    """``--isolation none`` has no mount namespace: the engine puts the host path back into the
    compile argv (``isolation.at_host_paths``), so the PCH is used there too."""
    argv = isolation.at_host_paths(Cpp.recipe("main.cpp", 256)["compile"], Cpp.binds())
    assert argv[argv.index("-isystem") + 1] == Cpp.pch()
    (tmp_path / "main.cpp").write_text("#include <bits/stdc++.h>\nint main() { return 0; }\n")
    done = subprocess.run([*argv, "-H", "-Winvalid-pch"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stderr.splitlines()[0] == f"! {Cpp.pch()}/bits/stdc++.h.gch", done.stderr[:2000]
    with BlockingEngine(slots=1, isolation="none", compile_cache=False) as eng:
        ex = eng.execute(Program("cpp", PCH_ON_INCLUDE_PATH), [b""], LIMITS)
    assert ex.compile.ok and ex.results[0].stdout == b"1\n", ex.compile.message
