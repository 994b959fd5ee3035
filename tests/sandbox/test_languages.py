"""Golden submissions per language with their expected status (DMOJ style), in the real sandbox."""

from __future__ import annotations

import pytest

from coderl.sandbox import Limits, Program, RunStatus
from tests.helpers.require import require

APLUSB = {
    "python": "a, b = map(int, input().split())\nprint(a + b)\n",
    "c": '#include <stdio.h>\nint main(){long a,b;scanf("%ld %ld",&a,&b);printf("%ld\\n",a+b);}\n',
    "cpp": "#include <iostream>\nint main(){long a,b;std::cin>>a>>b;std::cout<<a+b<<\"\\n\";}\n",
    "java": "import java.util.*;\npublic class Sum { public static void main(String[] x) {\n"
            "Scanner s = new Scanner(System.in); long a = s.nextLong(), b = s.nextLong();\n"
            "System.out.println(a + b); } }\n",
    "javascript": "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\n"
                  "console.log(a + b);\n",
    "go": 'package main\nimport "fmt"\nfunc main(){var a,b int64\nfmt.Scan(&a,&b)\nfmt.Println(a+b)}\n',
    "rust": "use std::io::*;\nfn main(){let mut s=String::new();stdin().read_to_string(&mut s).unwrap();\n"
            "let v:Vec<i64>=s.split_whitespace().map(|x|x.parse().unwrap()).collect();println!(\"{}\",v[0]+v[1]);}\n",
}
COMPILE_ERROR = {
    "c": "int main( { return 0; }", "cpp": "int main() { undefined_name; }",
    "java": "public class Main { void f( }", "go": "package main\nfunc main() { x := }",
    "rust": "fn main() { let x: i32 = \"s\"; }", "python": "def f(:\n",
}
LOOP = {
    "python": "while True: pass", "c": "int main(){volatile int x=0;for(;;)x++;}",
    "cpp": "int main(){volatile int x=0;for(;;)x++;}",
    "java": "public class Main { public static void main(String[] a) { long x = 0; while (true) x++; } }",
    "javascript": "let x = 0; for (;;) x++;",
    "go": "package main\nfunc main(){x:=0\nfor {x++}}", "rust": "fn main(){let mut x:u64=0;loop{x=x.wrapping_add(1);std::hint::black_box(x);}}",
}
CRASH = {
    "python": "raise SystemExit(3)", "c": "int main(){return 3;}", "cpp": "#include <cstdlib>\nint main(){std::abort();}",
    "java": "public class Main { public static void main(String[] a) { throw new RuntimeException(\"x\"); } }",
    "javascript": "process.exit(3);", "go": "package main\nfunc main(){panic(\"x\")}",
    "rust": "fn main(){std::process::exit(3);}",
}
MEMORY = {
    "python": "x = bytearray(600 << 20)\nx[::4096] = b'1' * len(x[::4096])",
    "c": "#include <stdio.h>\n#include <stdlib.h>\nint main(){volatile char*p=malloc(600<<20);long s=0;\n"
         "for(long i=0;i<(600L<<20);i+=4096){p[i]=1;s+=p[i];}printf(\"%ld\\n\",s);}",
    "cpp": "#include <vector>\nint main(){std::vector<char> v(600<<20, 1); return v[7];}",
    "java": "public class Main { public static void main(String[] a) { long[] x = new long[100_000_000]; "
            "System.out.println(x.length); } }",
    "javascript": "const a = []; for (;;) a.push(new Array(1e6).fill(1));",
    "go": "package main\nimport \"fmt\"\nfunc main(){b:=make([]byte,600<<20)\nfor i:=range b{b[i]=1}\nfmt.Println(len(b))}",
    "rust": "fn main(){let v=vec![1u8;600<<20];println!(\"{}\",v.iter().map(|&x| x as u64).sum::<u64>());}",
}


def _available(engine, lang: str) -> None:
    require(lang in engine.engine.languages(), f"{lang} toolchain not installed on this host (scripts/setup.sh installs it)")


@pytest.mark.parametrize("lang", sorted(APLUSB))
def test_accepts_a_plus_b_compiled_once(engine, lang):
    _available(engine, lang)
    ex = engine.execute(Program(lang, APLUSB[lang]), [b"1 2\n", b"40 2\n", b"-5 5\n"],
                        Limits(cpu_s=5, wall_s=10, memory_mb=256))
    assert ex.compiled, ex.compile.message
    assert [r.stdout for r in ex.results] == [b"3\n", b"42\n", b"0\n"], ex.results[0]


@pytest.mark.parametrize("lang", sorted(COMPILE_ERROR))
def test_compile_error_keeps_message(engine, lang):
    _available(engine, lang)
    ex = engine.execute(Program(lang, COMPILE_ERROR[lang]), [b""])
    assert ex.compile is not None and not ex.compile.ok and not ex.compile.sandbox_error
    assert ex.compile.message.strip()
    assert ex.results[0].status is RunStatus.SKIPPED


@pytest.mark.parametrize("lang", sorted(LOOP))
def test_infinite_loop_is_time_limit(engine, lang):
    _available(engine, lang)
    ex = engine.execute(Program(lang, LOOP[lang]), [b""], Limits(cpu_s=1, wall_s=4, memory_mb=256))
    assert ex.results[0].status is RunStatus.TIME_LIMIT, ex.results[0]


@pytest.mark.parametrize("lang", sorted(CRASH))
def test_crash_is_runtime_error(engine, lang):
    _available(engine, lang)
    ex = engine.execute(Program(lang, CRASH[lang]), [b""], Limits(cpu_s=2, wall_s=6, memory_mb=256))
    assert ex.results[0].status is RunStatus.RUNTIME_ERROR, ex.results[0]


@pytest.mark.parametrize("lang", sorted(MEMORY))
def test_memory_hog_is_memory_limit(engine, lang):
    _available(engine, lang)
    ex = engine.execute(Program(lang, MEMORY[lang]), [b""], Limits(cpu_s=5, wall_s=10, memory_mb=128))
    assert ex.compiled, ex.compile.message
    assert ex.results[0].status is RunStatus.MEMORY_LIMIT, ex.results[0]
