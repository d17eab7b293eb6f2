"""What notebooks and the Lab front end are sent: ProgramJSON and its DOT source, a big program's outline in parts,
the group hierarchy, the MIME bundles of programs and traces. Built from plain data of the layers below; nothing
below imports this package."""
