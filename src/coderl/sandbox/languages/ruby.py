from __future__ import annotations

import glob
import re

from coderl.sandbox.languages.base import Language

#: where Debian puts the gems it ships (ruby-test-unit's, then libruby's bundled ones)
_GEM_DIRS = ("/usr/share/rubygems-integration/all/gems", "/usr/lib/ruby/gems/*/gems")
#: the gems MultiPL-E's Ruby tests load (`require 'test/unit'`) and the one test-unit needs
_TEST_GEMS = ("test-unit", "power_assert")


def _newest_lib(gem: str) -> str | None:
    """The lib directory of the newest installed copy of ``gem`` (None: not installed)."""
    found = [path for pattern in _GEM_DIRS for path in glob.glob(f"{pattern}/{gem}-[0-9]*/lib")]

    def version(path: str) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path.rsplit(f"/{gem}-", 1)[1]))

    return max(found, key=version, default=None)


class Ruby(Language):
    """Runs with ``--disable-gems`` (RubyGems' start costs ~40 ms per run); MultiPL-E's tests need
    test-unit, a gem, so its lib directory and power_assert's are on ``RUBYLIB`` instead."""

    name = "ruby"
    aliases = ("rb",)
    source_name = "main.rb"
    run_argv = ("/usr/bin/ruby", "--disable-gems", "main.rb")
    version_argv = ("ruby", "--version")
    env = {"RUBYLIB": ":".join(lib for lib in map(_newest_lib, _TEST_GEMS) if lib)}
    memory_error_markers = ("NoMemoryError", "failed to allocate memory")
    hello = 'puts "hello, coderl"\n'
    libraries_hello = 'require "test/unit/assertions"\nputs "hello, coderl"\n'
