from hubspoke.cli.verify import run_verify
from hubspoke.cli.checks import report
from hubspoke.config import load

def test_smoke(deployed, deployed_config, kube, capsys):
    results = run_verify(deployed.config, deployed.clients, config_path=str(deployed_config), kubeconfig=(kube.kubeconfig,))
    report(results, title="t", as_json=False)
    out = capsys.readouterr().out
    print(out)
    open("/tmp/i10/out.txt","w").write(out)
