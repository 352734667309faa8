"""The "nrtpy" logger.

A library logger: it has a NullHandler and no level of its own, so the
application decides what is shown (``logging.basicConfig(level="INFO")``
shows nrtpy's INFO messages).
"""

import logging

logger = logging.getLogger("nrtpy")
logger.addHandler(logging.NullHandler())
