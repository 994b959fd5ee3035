"""Go's prebuilt standard-library cache (scripts/build_runtime.sh): a submission's private cache
starts as links to it, and nothing a program does can change it for the next submission."""

from __future__ import annotations

from coderl.sandbox import Limits, Program
from coderl.sandbox.runtime_env import go_cache
from tests.helpers.require import needs

pytestmark = needs(go_cache() is not None, "no prebuilt Go cache (scripts/build_runtime.sh, run by scripts/setup.sh)")
NET = 'package main\nimport ("fmt"; "net")\nfunc main(){fmt.Println(net.IPv4len)}\n'


def test_a_package_go_builds_under_cgo_off_comes_from_the_cache(engine):
    ex = engine.execute(Program("go", NET), [b""], Limits(cpu_s=2, wall_s=5))
    assert ex.compile.ok and ex.results[0].stdout == b"4\n", ex.compile


def test_the_prebuilt_cache_cannot_be_written(engine):
    src = (f"import os\nroot = {go_cache()!r}\nhits = []\nfor d, _, names in os.walk(root):\n"
           "    for n in names:\n        p = os.path.join(d, n)\n        try:\n"
           "            open(p, 'ab').write(b'poison'); hits.append(p)\n        except OSError:\n            pass\n"
           "try:\n    open(os.path.join(root, 'new'), 'w'); hits.append('new')\nexcept OSError:\n    pass\n"
           "print(len(hits))")
    r = engine.execute(Program("python", src), [b""], Limits(cpu_s=5, wall_s=10)).results[0]
    assert r.stdout == b"0\n", r.stderr
    ex = engine.execute(Program("go", NET), [b""], Limits(cpu_s=2, wall_s=5))
    assert ex.compile.ok and ex.results[0].stdout == b"4\n"
