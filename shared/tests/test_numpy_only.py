import subprocess
import sys
import textwrap


def test_base_modules_import_without_torch_triton_matplotlib_or_sklearn():
    # Block the optional dependencies and import everything the numpy-only install promises.
    code = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] in {'torch', 'triton', 'matplotlib', 'tqdm', 'sklearn', 'scipy'}:
                    raise ImportError('blocked ' + name)
        sys.meta_path.insert(0, Block())
        import icml25_shared, icml25_shared.data, icml25_shared.bench, icml25_shared.cli, icml25_shared.random
        import icml25_shared.stats, icml25_shared.tables, icml25_shared.validation, icml25_shared.testing
        from icml25_shared.cli import run_cli
        try:
            icml25_shared.data.load('iris')
        except ImportError as error:
            assert 'pip install "icml25-shared[sklearn]"' in str(error), error
        assert not any(m.split('.')[0] in {'torch', 'triton', 'matplotlib', 'sklearn'} for m in sys.modules)
        print('ok')
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
