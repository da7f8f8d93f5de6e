"""Shared APIs: APIResourceSchemas published by an APIExport, bound into other workspaces by APIBindings."""
