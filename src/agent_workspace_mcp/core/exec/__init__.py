"""Running programs for the agent: the policy that decides what may run and where
(`commands`: allowlist, PATH, the bubblewrap sandbox), the child process with bounded
output (`process`), the run loop shared by every command tool (`runner`), background jobs
(`jobs`) and their records on disk, shared by workers (`jobrecords`)."""
