"""The base every other package stands on: settings, domain errors, the clock, and the
names and interface of background jobs. Imports nothing from the rest of shared/."""
