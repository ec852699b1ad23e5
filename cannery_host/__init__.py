"""What runs Cannery's code outside the page, shared by tests/ and bench/.

* :mod:`cannery_host.wgpu_runner`: the WGSL kernels of ``kernels_wgsl/`` run natively
  through wgpu-py (needs numpy and wgpu, the ``test`` or ``bench`` extra).
* :mod:`cannery_host.browser`: Debian's Chromium with SwiftShader WebGPU, as the
  browser tests and ``bench/bench_lab.py`` launch it.

Neither tests nor bench import each other; both import this package.
"""
