"""What Kwker's PyTorch integrations share, so that none of them imports another's private
modules (kwker.torch_ops, kwker.dynamo and kwker.cpu_backend each import from here):

    extension   the compiled torch extension (_torch_ops*.so): which torch it was built for,
                whether it loads into this one, loading it once (imports no torch)
    kernels     Kwker's sort-family kernels on torch tensors, in Python (any torch version)
    ops         the one torch operator namespace, kwker_torch: the compiled kernels and linear
                operator, the graph operators the compile backend rewrites to, and the
                deprecated kwker:: aliases
    linear      the CPU backend's modes, schemes and codes, the option checks and weight packing
                (what kwker.cpu_backend.optimize and the compile backend's modes share)
    quant       the weight quantisation behind linear.pack (torch)

Importing this package imports no torch; ops, kernels and quant do.
"""
