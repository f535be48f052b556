import sys

from bench.chunkeval.cli import main

sys.exit(main())
