"""ksched's tests: unit/ (mirrors services/ and contracts/), contract/ (one suite per
Protocol, both backends), integration/, fuzz/, chaos/; test objects from builders/.

Not here: test support in a ``test_*.py`` file (another test would import it: it goes to
builders/ or a support module beside its tests); anything a service imports.
"""
