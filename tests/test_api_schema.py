def test_openapi_schema_and_docs_page_are_served(client, db):
    schema = client.get("/api/v1/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/orgs/" in schema.content
    docs = client.get("/api/v1/docs/")
    assert docs.status_code == 200
    assert b"cdn" not in docs.content.lower()  # self-contained: the sidecar's static files


def test_api_path_without_slash_redirects(client, org, owner):
    client.force_login(owner)
    response = client.get("/api/v1/orgs")
    assert response.status_code == 301 and response.url.endswith("/api/v1/orgs/")
