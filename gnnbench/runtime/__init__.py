"""What a kernel call goes through: systems found and loaded, graphs and their views, the boundary.

``registry``/``discovery`` find systems (one spec at a time); ``glue`` binds a
system's generated glue to the system API; ``graph`` holds CSR by destination
and its transpose; ``boundary`` checks every tensor handed to a kernel;
``kernel_clock`` times kernel calls; ``fallback`` lends missing operators.
"""
