"""The package's files, for setuptools (the rest of the metadata is in pyproject.toml).

A wheel must carry what the app reads at run time: the alembic migrations, kept at the
repository root in a checkout, go into the wheel as `app/migrations` (pyproject.toml cannot map
a directory from outside the package while also finding the package's own), and the console's
and GraphiQL's page files as package data. app/storage/migrate.py looks in both places.
"""

from setuptools import find_namespace_packages, setup

SKIP = ["*.__pycache__"]

setup(
    packages=[
        # Namespace packages too: app/edge/console holds only the console's page files.
        *find_namespace_packages(include=["app", "app.*"], exclude=SKIP),
        "app.migrations",
        *(f"app.migrations.{p}" for p in find_namespace_packages("migrations", exclude=SKIP)),
    ],
    package_dir={"app.migrations": "migrations"},
    package_data={
        "app.edge.graphql_http": ["graphiql_page.js"],
        "app.edge.console": ["*"],
        "app.migrations": ["*/script.py.mako"],
    },
)
