"""Print pins for coderl[sandbox]'s dependency closure as installed here (the environment the tests
ran in), for docker/Dockerfile.sandbox:

    python docker/pin_sandbox.py > docker/constraints-sandbox.txt
"""

from __future__ import annotations

import re
from importlib import metadata

from packaging.markers import default_environment
from packaging.requirements import Requirement


def closure(name: str, extras: tuple[str, ...] = ()) -> dict[str, str]:
    """{normalised name: installed version} of ``name[extras]`` and everything it needs here."""
    env = default_environment()
    found: dict[str, str] = {}
    todo = [(name, extras)]
    while todo:
        current, wanted = todo.pop()
        key = re.sub(r"[-_.]+", "-", current).lower()
        try:
            dist = metadata.distribution(current)
        except metadata.PackageNotFoundError:
            continue
        if key in found and not wanted:
            continue
        found[key] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({**env, "extra": e}) for e in (wanted or ("",))):
                todo.append((req.name, tuple(req.extras)))
    return found


def main() -> None:
    pins = closure("coderl", ("sandbox",))
    pins.pop("coderl", None)
    print("# coderl[sandbox]'s dependencies at the versions the test suite ran with (docker/Dockerfile.sandbox")
    print("# installs under these). Regenerate: python docker/pin_sandbox.py > docker/constraints-sandbox.txt")
    for name in sorted(pins):
        print(f"{name}=={pins[name]}")


if __name__ == "__main__":
    main()
