import sys

from ingestion.evaluation.cli import main

sys.exit(main())
