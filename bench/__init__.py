"""nodemedic's benchmarks, one module each, run as ``python -m bench.<name>`` from the
repository root (``make bench``): as modules, ``bench.agent`` cannot shadow the agent
package and the benchmarks import each other by their package names."""
