"""The frozen preset group (``preset/*.yaml``), a package so that Hydra finds it on the harness's
search path (``pkg://muster_exact.conf``, which Hydra accepts only for a folder with this file)."""
