"""Run against the non-editable wheel: the package imports and reports its version."""
import compileiq

assert compileiq.__version__ != "0.0.0+unknown", compileiq.__version__
print("compileiq smoke ok", compileiq.__version__)
