from tests._layer_testing import *  # noqa: F401,F403 pylint: disable=wildcard-import,unused-wildcard-import  Temporary (H18): delete once no file imports tests._modes.
