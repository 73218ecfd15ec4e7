// Owns the staff resource's request and response schemas.
import { Type } from 'typebox';
import { MIN_PASSWORD_LENGTH } from '../../lib/password.js';
import { Nullable, PageQuery, RecordId } from '../../lib/schemas.js';
import { DepartmentFilter, DepartmentInput } from '../settings/registry.js';

export const RoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('manager'), Type.Literal('staff')]);

export const Staff = Type.Object(
  {
    id: RecordId('stf'),
    name: Type.String({ maxLength: 200 }),
    email: Type.String({ format: 'email', maxLength: 254 }),
    role: RoleSchema,
    department: Nullable(Type.String({ maxLength: 50 })),
    active: Type.Boolean(),
    createdAt: Type.String({ format: 'date-time', maxLength: 30 }),
    updatedAt: Type.String({ format: 'date-time', maxLength: 30 }),
  },
  { $id: 'Staff' },
);

const Name = Type.String({ minLength: 1, maxLength: 200 });
export const Email = Type.String({ format: 'email', maxLength: 254 });
export const Department = DepartmentInput;
export const Password = Type.String({ minLength: MIN_PASSWORD_LENGTH, maxLength: 256 });

export const CreateStaffBody = Type.Object(
  {
    name: Name,
    email: Email,
    role: RoleSchema,
    department: Type.Optional(Nullable(Department)),
    password: Type.Optional(Password),
  },
  {
    additionalProperties: false,
    // A new colleague without a password: the answer carries a temporary one.
    examples: [{ name: 'João Silva', email: 'joao.silva@example.com', role: 'staff', department: 'housekeeping' }],
  },
);

export const CreatedStaff = Type.Object({
  ...Staff.properties,
  temporaryPassword: Type.Optional(
    Type.String({ maxLength: 256, description: 'Shown once when no password was given; the member should change it.' }),
  ),
});

export const UpdateStaffBody = Type.Object(
  {
    name: Type.Optional(Name),
    role: Type.Optional(RoleSchema),
    department: Type.Optional(Nullable(Department)),
    active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const ListStaffQuery = Type.Object(
  {
    ...PageQuery,
    role: Type.Optional(RoleSchema),
    department: Type.Optional(DepartmentFilter),
    active: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
