"""The product hashes passwords with a slow, salted function; only the test process swaps in MD5.

``tests/conftest.py`` sets MD5 for speed in this process. This checks the settings module itself
(what the web server and ``kb_user`` load) in a fresh interpreter, where no test override applies.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.bounds import START_WAIT

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import os
os.environ["DJANGO_SETTINGS_MODULE"] = "bulkhead.settings"
import django
django.setup()
from django.contrib.auth.hashers import get_hasher
hasher = get_hasher()
print(hasher.algorithm, getattr(hasher, "iterations", 0))
"""


def test_the_product_hashes_passwords_with_pbkdf2_or_stronger():
    run = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=START_WAIT,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT)})
    assert run.returncode == 0, run.stderr[-2000:]
    algorithm, iterations = run.stdout.split()[-2:]
    assert algorithm in {"pbkdf2_sha256", "argon2", "scrypt", "bcrypt_sha256"}, algorithm
    if algorithm == "pbkdf2_sha256":
        assert int(iterations) >= 600_000, iterations

