"""Cold/warm read benchmark analysis (no CDK): results parsing, statistics, plot."""
