import { readFileSync } from 'node:fs';
import * as path from 'node:path';

/** The extension's package.json (compiled to out/test). */
export const PACKAGE_JSON_PATH = path.resolve(__dirname, '..', '..', 'package.json');

export function packageJson(): any {
  return JSON.parse(readFileSync(PACKAGE_JSON_PATH, 'utf8'));
}
