"""The operator console (issue 31): a web page where the person who runs the server
sees every agent action live, reviews diffs, undoes work and stops jobs, without going
through the agent."""
