// eslint.config.mjs -- ESLint's rules for the page (web/*.mjs, web/app.js)
// and these tests, run by scripts/lint js (make lint-js).
//
// Owns: which rules run and on what.  Does not own: the code's layout (tabs,
// as .editorconfig says; ESLint checks what may be wrong, not the style).

import js from '@eslint/js';
import globals from 'globals';

export default [
	{
		ignores: ['**/node_modules/**', '**/dist/**'],
	},
	js.configs.recommended,
	{
		files: ['web/**/*.mjs', 'web/**/*.js'],
		languageOptions: {
			ecmaVersion: 2022,
			sourceType: 'module',
			globals: { ...globals.browser },
		},
	},
	{
		files: ['tests/js/**/*.mjs'],
		languageOptions: {
			ecmaVersion: 2022,
			sourceType: 'module',
			globals: { ...globals.node },
		},
	},
	{
		rules: {
			'no-unused-vars': ['error', { args: 'none', caughtErrors: 'none' }],
			'no-control-regex': 'off',   // paste.mjs, predict.mjs: control characters are the point
			eqeqeq: 'error',
			'no-var': 'error',
			'prefer-const': 'error',
			'no-shadow': 'error',
			'no-implicit-globals': 'error',
		},
	},
];
