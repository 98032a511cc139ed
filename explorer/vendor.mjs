// Copy the built graph library and its license from node_modules into the Flask app's static/vendor/.
// Run after `npm ci`; commit the copied files. tests/test_explorer_assets.py checks they match package-lock.json.
import { copyFileSync, mkdirSync, readFileSync } from "node:fs";

const target = new URL("../service/hypermem/api/static/vendor/", import.meta.url);
mkdirSync(target, { recursive: true });
const pkg = JSON.parse(readFileSync(new URL("node_modules/cytoscape/package.json", import.meta.url)));
copyFileSync(new URL("node_modules/cytoscape/dist/cytoscape.min.js", import.meta.url), new URL("cytoscape.min.js", target));
copyFileSync(new URL("node_modules/cytoscape/LICENSE", import.meta.url), new URL("cytoscape.LICENSE", target));
console.log(`vendored cytoscape ${pkg.version}`);
