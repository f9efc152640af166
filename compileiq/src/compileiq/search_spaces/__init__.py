"""Search spaces: the DSL (``base``) and, in ``compilers``, spaces built from compiler options."""
