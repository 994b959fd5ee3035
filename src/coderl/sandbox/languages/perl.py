from __future__ import annotations

from coderl.sandbox.languages.base import Language


class Perl(Language):
    name = "perl"
    aliases = ("pl",)
    source_name = "main.pl"
    run_argv = ("/usr/bin/perl", "main.pl")
    version_argv = ("perl", "-e", "print qq(perl $^V\\n)")
    memory_error_markers = ("Out of memory",)
    hello = 'print "hello, coderl\\n";\n'
    libraries_hello = 'use Test::Deep;\nuse Data::Compare;\nprint "hello, coderl\\n";\n'
