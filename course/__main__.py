import sys

from dro_course.cli import main

sys.exit(main())
